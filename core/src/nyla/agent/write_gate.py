"""What must happen before a writing tool's handler starts (:data:`BEFORE_WRITE`).

A durable run (:mod:`nyla.agent.durable`) records every writing call it starts in its row
before the handler runs, so a crash at any moment after the start leaves the call listed
among the run's unfinished writes. The journal writes the TOOL_CALL event a few milliseconds
later, which alone would leave that gap. Read-only calls pass no gate: their round costs
nothing more. The gate is a context variable so the loop needs no knowledge of where runs
are stored; a gate that raises keeps the handler from running (the call fails)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

from nyla.models.ai import ToolCall

#: ``gate(call, ctx)`` awaited before a writing tool's handler (``ctx``: its ToolContext)
BeforeWrite = Callable[[ToolCall, Any], Awaitable[None]]

BEFORE_WRITE: ContextVar[BeforeWrite | None] = ContextVar("nyla_before_write", default=None)
