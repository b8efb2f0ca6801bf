"""While a turn's last batch runs, the loop neutralizes the conversation so far, so the next
model call scans only what that batch returned — and sends exactly what it would have."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from pydantic import BaseModel

from nyla.agent.spec import RunSpec
from nyla.hookspecs import hookimpl
from nyla.models.agent import AgentConfig, RunContext
from nyla.models.ai import ChatRequest
from nyla.models.neutralize import Finding
from nyla.models.tools import Tool, ToolContext


class NoArgs(BaseModel):
    pass


class CountingEmailFinder:
    """Finds e-mail addresses and remembers every text it scanned."""

    id = "counting-email"

    def __init__(self) -> None:
        self.scanned: list[str] = []

    def find(self, text: str) -> list[Finding]:
        self.scanned.append(text)
        return [
            Finding(start=m.start(), end=m.end(), category="EMAIL", value=m.group(0))
            for m in re.finditer(r"[\w.]+@[\w.]+\.\w+", text)
        ]


class FinderPlugin:
    def __init__(self, finder: CountingEmailFinder) -> None:
        self.finder = finder

    @hookimpl
    def nyla_neutralizers(self) -> list[Any]:
        return [self.finder]


async def test_the_read_results_are_neutralized_while_the_write_runs(
    scripted, make_kernel, db, run_events
):
    finder = CountingEmailFinder()
    seen_during_write: list[str] = []

    async def lookup(args: BaseModel, ctx: ToolContext) -> str:
        return "owner: bruno@example.org"

    async def save(args: BaseModel, ctx: ToolContext) -> str:
        await asyncio.sleep(0.05)  # the write's I/O
        seen_during_write.extend(finder.scanned)
        return "saved for carla@example.net"

    def script(request: ChatRequest, i: int) -> Any:
        if i == 0:
            return [("lookup", {}), ("save", {})]
        return "done"

    provider = scripted(script)
    kernel = make_kernel(provider, FinderPlugin(finder), db=db, builtins=False)
    tools = [
        Tool.from_model("lookup", "lookup", NoArgs, lookup, read_only=True),
        Tool.from_model("save", "save", NoArgs, save),
    ]
    events = await run_events(
        kernel.agent.loop(
            RunSpec(
                "Who owns anna@example.com?",
                config=AgentConfig(),
                context=RunContext(require_neutralization=True),
                tools=tools,
            ),
        )
    )
    assert events[-2].text == "done"
    # the read's result was scanned before the write finished, not after
    assert "owner: bruno@example.org" in seen_during_write
    assert "saved for carla@example.net" not in seen_during_write
    # every text was scanned once, and the second call got only placeholders
    assert len(finder.scanned) == len(set(finder.scanned))
    second = " ".join(m.text for m in provider.requests[1].messages)
    for address in ("anna@example.com", "bruno@example.org", "carla@example.net"):
        assert address not in second
    assert {"[EMAIL_1]", "[EMAIL_2]", "[EMAIL_3]"} <= set(re.findall(r"\[EMAIL_\d\]", second))
