"""``nyla mcp add/list/remove`` against the demo server, schemas that are refused with a
reason, and a server of one user that another user's run cannot call."""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace

import anyio
import pytest
from sqlalchemy import text

from nyla.sdk import RunContext, ToolContext
from nyla.testing import invoke_cli
from nyla_toolbox_mcp import mcp_toolboxes
from nyla_toolbox_mcp.tools import accept, tool_name

from .conftest import DEMO, in_loop


async def cli(args: list[str]):
    """``nyla ARGS`` from an async test (a command runs its own event loop)."""
    return await anyio.to_thread.run_sync(invoke_cli, args)


def _listed(schema, name="t", read_only=None):
    hints = SimpleNamespace(read_only_hint=read_only)
    return SimpleNamespace(name=name, description="", input_schema=schema, annotations=hints)


def test_nyla_mcp_add_list_remove(store, server_log):
    added = invoke_cli(
        [
            "mcp", "add", "demo", "--command", sys.executable, "--arg", str(DEMO),
            "--env", f"MCP_TEST_LOG={server_log}", "--user", "ada", "--json",
        ]
    )  # fmt: skip
    assert added.exit_code == 0, added.output
    body = json.loads(added.output)
    assert body["toolbox"] == "mcp:demo"
    assert sorted(body["tools"]) == ["crash", "flood", "hang", "lookup", "note", "quote"]
    assert body["env"] == ["MCP_TEST_LOG"]  # names only: values may be secrets
    assert str(server_log) not in added.output

    async def at_rest(store):
        async with store.db.session() as s:
            rows = (await s.execute(text("SELECT config::text FROM mcp_servers"))).scalars()
            return list(rows), await store.get("ada", "demo")

    (row,), server = in_loop(at_rest)
    assert "MCP_TEST_LOG" in row and str(server_log) not in row  # sealed in the row ...
    assert server.env == {"MCP_TEST_LOG": str(server_log)}  # ... and opens
    listed = invoke_cli(["mcp", "list", "--user", "ada", "--json"])
    assert [s["name"] for s in json.loads(listed.output)] == ["demo"]
    assert json.loads(invoke_cli(["mcp", "list", "--user", "bob", "--json"]).output) == []
    assert invoke_cli(["mcp", "remove", "demo", "--user", "ada"]).exit_code == 0
    missing = invoke_cli(["mcp", "remove", "demo", "--user", "ada"])
    assert missing.exit_code != 0 and "no MCP server 'demo'" in missing.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["--url", "ftp://x"], "http(s) URL"),
        (["--command", "x", "--url", "http://x"], "either --command"),
        (["--command", "x", "--env", "NOEQUALS"], "KEY=VALUE"),
    ],
)
def test_nyla_mcp_add_refuses_bad_input_and_stores_nothing(store, args, message):
    done = invoke_cli(["mcp", "add", "demo", *args, "--user", "ada"])
    assert done.exit_code != 0 and message in done.output
    assert in_loop(lambda store: store.servers("ada")) == []


def test_nyla_mcp_add_of_a_server_that_does_not_start_stores_nothing(store):
    done = invoke_cli(["mcp", "add", "gone", "--command", "/nonexistent/mcp", "--user", "ada"])
    assert done.exit_code != 0 and "could not list the tools of 'gone'" in done.output
    assert in_loop(lambda store: store.servers("ada")) == []


@pytest.mark.parametrize(
    "schema, reason",
    [
        ({"type": "array"}, "type object"),
        (
            {"type": "object", "properties": {"a": {"type": "no-such-type"}}},
            "not valid JSON Schema",
        ),
        ({"type": "object", "required": "a"}, "not valid JSON Schema"),
        ("object", "type object"),
    ],
)
def test_a_schema_that_is_not_json_schema_is_refused_with_a_reason(schema, reason):
    found = accept(_listed(schema))
    assert isinstance(found, str) and reason in found


def test_read_only_only_when_the_server_says_so():
    schema = {"type": "object"}
    assert accept(_listed(schema, read_only=True)).read_only is True
    assert accept(_listed(schema, read_only=None)).read_only is False
    assert accept(_listed(schema, read_only=False)).read_only is False


def test_tool_names_follow_the_house_convention():
    assert tool_name("github", "get_issue") == "mcpGithub_getIssue"
    assert tool_name("my-files", "read.file") == "mcpMyFiles_readFile"
    assert len(tool_name("s", "x" * 200)) == 64


async def test_another_users_run_cannot_call_a_users_server(store, demo, server_log):
    from nyla_toolbox_mcp.cli import add_server

    await add_server(store, "ada", demo)
    assert await mcp_toolboxes(store, RunContext(user_id="bob")) == []  # not offered to bob
    (toolbox,) = await mcp_toolboxes(store, RunContext(user_id="ada"))
    note = next(t for t in toolbox.tools if t.name == "mcpDemo_note")
    args = note.args_model.model_validate({"text": "hello"})
    result = await note.handler(args, ToolContext(run=RunContext(user_id="bob")))
    assert not result.success and result.error_details.code == "NOT_AVAILABLE"
    assert not server_log.exists()  # the server was never started for bob


async def test_a_mandates_server_serves_its_users_and_no_other_mandates(
    store, demo, server_log, make_kernel
):
    from nyla_toolbox_mcp.cli import add_server

    await add_server(store.mandates(), "m1", demo)  # what ``nyla mcp add --mandate m1`` does
    assert await store.mandates().users() == ["m1"]
    assert await store.users() == []  # no user has it as their own
    listed = await cli(["mcp", "list", "--mandate", "m1", "--json"])
    assert [s["name"] for s in json.loads(listed.output)] == ["demo"]
    (toolbox,) = await mcp_toolboxes(store, RunContext(user_id="bob", mandate_id="m1"))
    note = next(t for t in toolbox.tools if t.name == "mcpDemo_note")
    args = note.args_model.model_validate({"text": "from a mandate user"})
    other = await note.handler(args, ToolContext(run=RunContext(user_id="eve", mandate_id="m2")))
    assert not other.success and other.error_details.code == "NOT_AVAILABLE"
    assert not server_log.exists()  # never started for another mandate's user
    from nyla.testing import tool_context

    as_bob = tool_context(make_kernel(db=store.db, builtins=False), user="bob", mandate="m1")
    done = await note.handler(args, as_bob)
    assert done.success, done.error
    assert server_log.read_text() == "from a mandate user\n"
    assert (await cli(["mcp", "remove", "demo", "--mandate", "m1"])).exit_code == 0
    gone = await note.handler(args, as_bob)
    assert not gone.success and gone.error_details.code == "NOT_AVAILABLE"
    missing = await cli(["mcp", "remove", "demo", "--mandate", "m1"])
    assert missing.exit_code != 0 and "for mandate 'm1'" in missing.output
