"""A plugin whose ``runs.step`` action the workflow-run tests drive: it records each call
(in memory, and as a line in a log file another process can read), fails its first
attempts when asked, waits while a block file exists, and charges the run when asked."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pydantic import Field

from nyla.sdk import ToolContext, ToolResult, hookimpl
from nyla.sdk.actions import Action, ActionParams, ActionResult, Method


class StepParams(ActionParams):
    """Parameters of ``runs.step``."""

    label: str = Field(description="Names the call.")
    text: str | None = Field(None, description="Text from an earlier node.")
    fail_times: int = Field(0, ge=0, description="Attempts that fail before one passes.")
    block: bool = Field(False, description="Wait while the block file exists.")
    charge: float = Field(0.0, ge=0, description="CHF charged to the run.")
    save: bool = Field(False, description="Save the answer as a file (a result document).")


class RunsProbe:
    """Contributes the ``runs`` method; ``calls`` holds the label of each call."""

    def __init__(self, folder: Path | None = None) -> None:
        self.calls: list[str] = []
        self.contexts: list[ToolContext] = []
        self.failed: dict[str, int] = {}
        self.folder = folder
        self.started = asyncio.Event()

    @property
    def log(self) -> Path | None:
        return self.folder / "calls.log" if self.folder else None

    @property
    def block_file(self) -> Path | None:
        return self.folder / "block" if self.folder else None

    async def step(self, params: StepParams, ctx: ToolContext) -> ToolResult | ActionResult:
        self.calls.append(params.label)
        self.contexts.append(ctx)
        if self.log is not None:
            with self.log.open("a") as out:
                out.write(params.label + "\n")
        if self.failed.get(params.label, 0) < params.fail_times:
            self.failed[params.label] = self.failed.get(params.label, 0) + 1
            raise RuntimeError(f"{params.label} is flaky")
        if params.block:
            self.started.set()
            while self.block_file is None or self.block_file.exists():
                await asyncio.sleep(0.05)
        ctx.charge(params.charge)
        data: dict[str, Any] = {"label": params.label, "got": params.text}
        answer = f"{params.label}({params.text or ''})"
        if params.save:
            saved = await ctx.services.files.save(
                f"{params.label}.txt",
                answer.encode(),
                ctx.run,
                mime_type="text/plain",
                dedupe=False,
            )
            return ActionResult(text=answer, data=data, documents=[saved.id])
        return ToolResult.ok(answer, data=data)

    @hookimpl
    def nyla_methods(self) -> list[Method]:
        step = Action(
            name="step",
            description="One step of a test workflow.",
            params=StepParams,
            handler=self.step,
            timeout_s=600,
        )
        return [Method(name="runs", description="Workflow-run test actions.", actions=[step])]
