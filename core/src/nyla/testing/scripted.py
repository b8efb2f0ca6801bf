"""The scripted model, for tests (it lives in :mod:`nyla.ai.scripted`, which needs no pytest,
so ``make demo`` runs on an install without the ``testing`` extra)."""

from __future__ import annotations

from nyla.ai.scripted import ScriptedPlugin, ScriptedProvider, ScriptFn, scripted_reply

__all__ = ["ScriptFn", "ScriptedPlugin", "ScriptedProvider", "scripted_reply"]
