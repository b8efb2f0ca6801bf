"""The AI service: the one way nyla calls a model.

One pipeline for every call: neutralize -> select model -> price preflight against the budget
-> provider call with retries and fallback -> usage and cost recorded. The modules:

- :mod:`nyla.ai.service` — :class:`~nyla.ai.service.AiService` (``kernel.ai``)
- :mod:`nyla.ai.selector` — model registry view and selection
- :mod:`nyla.ai.pricing` — cost estimates, budget preflight, per-run totals
- :mod:`nyla.ai.retry` — jittered exponential backoff honouring ``Retry-After``
- :mod:`nyla.ai.tokens` — offline token counting
- :mod:`nyla.ai.neutralize` — the neutralization gate and its placeholder session
- :mod:`nyla.ai.default_neutralizer` — the kernel's default detectors (a built-in plugin)

The helpers provider plugins share (HTTP errors, the OpenAI-compatible base class) live in
:mod:`nyla.sdk`, the stable surface for plugin authors.

Names are imported lazily so that importing a submodule stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "AiService": "nyla.ai.service",
    "NeutralizationSession": "nyla.ai.neutralize",
    "ModelSelector": "nyla.ai.selector",
    "RetryPolicy": "nyla.ai.retry",
    "count_tokens": "nyla.ai.tokens",
    "config_value": "nyla.config",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'nyla.ai' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
