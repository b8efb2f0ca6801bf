"""Toolboxes a plugin resolves per run (``RunToolboxes``): bound once to the kernel's
database, asked when each run starts, so a toolbox whose row another kernel added is in the
next run without a restart; the entry itself is never offered, and a failing source leaves
the run going without its toolboxes."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, PrivateAttr
from sqlalchemy import text

from nyla.hookspecs import hookimpl
from nyla.models.agent import AgentConfig, RunContext
from nyla.models.ai import ChatResponse, Role, ToolCall
from nyla.models.tools import Tool, Toolbox, ToolResult
from nyla.sdk.run_toolboxes import RunToolboxes
from nyla.testing import plugin_kernel
from nyla.testing.helpers import collect_events
from nyla.testing.scripted import ScriptedProvider


class NoArgs(BaseModel):
    pass


class Notes(RunToolboxes):
    """One toolbox ``note:<name>`` per row of ``run_tb_notes`` owned by the run's user."""

    _db: Any = PrivateAttr(default=None)

    def bind(self, db: Any) -> None:
        self._db = db

    async def for_run(self, context: RunContext) -> list[Toolbox]:
        async with self._db.session() as s:
            await s.execute(text("CREATE TABLE IF NOT EXISTS run_tb_notes (owner text, name text)"))
            rows = await s.execute(
                text("SELECT name FROM run_tb_notes WHERE owner = :o ORDER BY name"),
                {"o": context.user_id},
            )
            return [_toolbox(name) for (name,) in rows]


class Broken(RunToolboxes):
    def bind(self, db: Any) -> None:
        return None

    async def for_run(self, context: RunContext) -> list[Toolbox]:
        raise RuntimeError("storage down")


def _toolbox(name: str) -> Toolbox:
    async def handler(args: Any, ctx: Any) -> ToolResult:
        return ToolResult.ok(f"note {name}")

    tool = Tool(
        name=f"read{name.title()}",
        description="a note",
        parameters={"type": "object", "properties": {}},
        args_model=NoArgs,
        handler=handler,
        read_only=True,
    )
    return Toolbox(id=f"note:{name}", tools=[tool])


class Plugin:
    @hookimpl
    def nyla_toolboxes(self) -> list[Toolbox]:
        return [Notes(id="notes"), Broken(id="broken")]


def _kernel(db: Any, script: Any) -> Any:
    return plugin_kernel(Plugin(), ScriptedProvider(script, id="s", model="m"), db=db)


async def test_a_row_added_through_one_kernel_is_a_toolbox_of_the_next_run_of_another(db, caplog):
    offered: list[list[str]] = []
    seen: list[str] = []

    def script(request, index):
        names = [t.name for t in request.tools or []]
        offered.append(names)
        done = [m for m in request.messages if m.role is Role.TOOL]
        seen.extend(m.text for m in done)
        if "requestToolbox" in names and not done:
            args = json.dumps({"toolboxId": "note:alpha", "reason": "x"})
            return ChatResponse(
                tool_calls=[ToolCall(id="c1", name="requestToolbox", arguments=args)]
            )
        if "readAlpha" in names and len(done) == 1:
            return ChatResponse(tool_calls=[ToolCall(id="c2", name="readAlpha", arguments="{}")])
        return "done"

    first, second = _kernel(db, script), _kernel(db, script)
    config = AgentConfig(model="s:m", max_rounds=5)
    ada = RunContext(user_id="ada")
    await collect_events(first.agent.run("hi", config, ada))
    assert first.agent.toolbox_session(config, ada).inactive == []  # no entry is offered
    async with db.session() as s:
        await s.execute(text("INSERT INTO run_tb_notes VALUES ('ada', 'alpha')"))
    offered.clear()
    events = await collect_events(second.agent.run("hi", config, ada))
    results = [e.data for e in events if e.type == "TOOL_RESULT"]
    assert [r["toolName"] for r in results] == ["requestToolbox", "readAlpha"]
    assert results[1]["success"] and "note alpha" in seen
    assert all("notes" not in json.dumps(n) for n in offered)
    bob = await second.agent.run_toolboxes(RunContext(user_id="bob"))
    assert bob == {}  # another user's rows are not his toolboxes
    assert "storage down" in caplog.text  # the failing source is logged, the runs went on


def test_a_command_accepts_the_ids_a_run_toolboxes_entry_may_answer(db):
    from nyla.agent.cli import _may_have

    registry = _kernel(db, lambda request, index: "done").plugins.toolboxes
    assert _may_have(registry, "notes:alpha")  # resolved when the run starts
    assert not _may_have(registry, "notes")  # the entry itself is no toolbox
    assert not _may_have(registry, "other:alpha")
