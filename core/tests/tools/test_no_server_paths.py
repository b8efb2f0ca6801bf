"""A tool error never tells the model where the server's files are (issue 27, fault 7): a
plugin tool's exception, a connector error and an invalid value are shown with server paths
hidden, while a path the model sent itself stays readable."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from nyla.agent.spec import RunSpec
from nyla.connections.errors import VendorNotFoundError
from nyla.connections.redact import HIDDEN
from nyla.models.agent import AgentConfig, RunContext
from nyla.models.ai import ChatRequest, ToolCall
from nyla.models.tools import Tool, ToolContext
from nyla.tools.datasources import guarded


class PathArgs(BaseModel):
    path: str = ""


async def test_a_plugin_tool_s_os_error_reaches_the_model_without_the_path(
    scripted, make_kernel, db
):
    async def reads(args: PathArgs, ctx: ToolContext) -> str:
        raise FileNotFoundError(2, "No such file or directory", "/srv/nyla/tenants/acme/q3.pdf")

    def script(request: ChatRequest, i: int) -> Any:
        if request.messages[-1].role == "tool":
            return "done"
        return [ToolCall(id="c1", name="readLocal", arguments='{"path": "q3.pdf"}')]

    tool = Tool.from_model("readLocal", "Reads.", PathArgs, reads, read_only=True)
    kernel = make_kernel(scripted(script), db=db, builtins=False)
    events = [
        e
        async for e in kernel.agent.loop(
            RunSpec("go", config=AgentConfig(stream=False), context=RunContext(), tools=[tool]),
        )
    ]
    [result] = [e.data for e in events if e.type.value == "TOOL_RESULT"]
    assert result["errorDetails"]["code"] == "TOOL_ERROR"
    assert "/srv/nyla" not in result["error"] and HIDDEN in result["error"]
    assert "No such file or directory" in result["error"]


async def test_connector_and_value_errors_hide_server_paths_but_keep_the_model_s_own():
    async def not_found(args: PathArgs, ctx: ToolContext) -> Any:
        raise VendorNotFoundError(
            f"localfs: {args.path} not found below /var/lib/nyla/share/docs", service="localfs"
        )

    async def bad_value(args: PathArgs, ctx: ToolContext) -> Any:
        raise ValueError(f"cannot read {args.path}: /home/op/.config/nyla/key is locked")

    sent = PathArgs(path="/reports/2026/q3.txt")
    for handler in (not_found, bad_value):
        result = await guarded(handler)(sent, ToolContext())
        assert result.success is False
        assert "/reports/2026/q3.txt" in (result.error or ""), result.error
        assert "/var/lib" not in (result.error or "") and "/home/op" not in (result.error or "")
        assert HIDDEN in (result.error or "")
