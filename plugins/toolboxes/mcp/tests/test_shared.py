"""The servers and sign-ins are rows of the kernel's PostgreSQL: a server added by another
process is in the next run of a kernel that was running before (and of a second kernel),
without a restart; the files of an earlier nyla are imported once per database, their
values still sealed, and left as they are."""

from __future__ import annotations

import json

import anyio
from sqlalchemy import text

import nyla_toolbox_mcp
from nyla.sdk import AgentConfig, ChatResponse, Role, RunContext, TokenCipher, ToolCall
from nyla.testing import invoke_cli, plugin_kernel
from nyla.testing.scripted import ScriptedProvider
from nyla_toolbox_mcp.grants import Grant
from nyla_toolbox_mcp.servers import seal_server


def _script(offered: list[list[str]]):
    def script(request, index):
        names = [t.name for t in request.tools or []]
        offered.append(names)
        done = [m for m in request.messages if m.role is Role.TOOL]
        if not done and "requestToolbox" in json.dumps(names):
            tool = next(t for t in request.tools if t.name == "requestToolbox")
            if "mcp:demo" in json.dumps(tool.parameters):
                args = json.dumps({"toolboxId": "mcp:demo", "reason": "customer"})
                return ChatResponse(
                    tool_calls=[ToolCall(id="r", name="requestToolbox", arguments=args)]
                )
        if len(done) == 1 and "mcpDemo_lookup" in names:
            args = json.dumps({"customer": "Ada"})
            return ChatResponse(
                tool_calls=[ToolCall(id="l", name="mcpDemo_lookup", arguments=args)]
            )
        return "done"

    return script


async def test_a_server_added_by_another_process_is_in_the_next_run_without_a_restart(
    run_events, store, demo
):
    offered: list[list[str]] = []
    provider = ScriptedProvider(_script(offered), id="scripted", model="m")
    running = plugin_kernel(nyla_toolbox_mcp, provider, db=store.db, builtins=True)
    context = RunContext(user_id="ada", workflow_id="wf-shared")
    config = AgentConfig(model="scripted:m", max_rounds=5, max_cost_chf=1.0)
    before = await run_events(running.agent.run("Who is Ada?", config, context))
    assert not [e for e in before if e.type == "TOOL_RESULT"]  # no MCP server yet

    added = await anyio.to_thread.run_sync(  # `nyla mcp add`: its own database connection
        invoke_cli,
        ["mcp", "add", "demo", "--command", demo.command, *[f"--arg={a}" for a in demo.args],
         "--env", f"MCP_TEST_LOG={demo.env['MCP_TEST_LOG']}", "--user", "ada",
         "--start-timeout", "120"],
    )  # fmt: skip
    assert added.exit_code == 0, added.output
    for kernel in (running, plugin_kernel(nyla_toolbox_mcp, provider, db=store.db, builtins=True)):
        with anyio.fail_after(300):
            events = await run_events(kernel.agent.run("Who is Ada?", config, context))
        results = [
            (e.data["toolName"], e.data["success"]) for e in events if e.type == "TOOL_RESULT"
        ]
        assert results == [("requestToolbox", True), ("mcpDemo_lookup", True)]
    assert all("mcp" not in names for names in offered)  # the registry entry is never a tool


async def test_an_earlier_nylas_files_are_imported_once(store, demo, tmp_path):
    cipher = TokenCipher.from_config()
    folder = tmp_path / "mcp"
    (folder / "mandates").mkdir(parents=True)
    (folder / "oauth" / "users" / "ada").mkdir(parents=True)
    (folder / "ada.json").write_text(json.dumps([seal_server(demo, cipher)]))
    mandate_server = demo.model_copy(update={"name": "crm"})
    (folder / "mandates" / "m1.json").write_text(json.dumps([seal_server(mandate_server, cipher)]))
    grant = Grant(
        server_url="https://x/mcp",
        resource="https://x/mcp",
        tokens={"access_token": "at-imported", "refresh_token": "rt-imported"},
        client={"client_id": "c"},
        auth_server={"issuer": "https://x"},
        redirect_uri="http://127.0.0.1:1/callback",
    )
    sealed = cipher.encrypt(grant.model_dump_json())
    (folder / "oauth" / "users" / "ada" / "secure.json").write_text(json.dumps({"sealed": sealed}))
    (folder / "bob.json").write_text("{not json")  # unreadable: left where it is

    (server,) = await store.servers("ada")  # the first use imports
    assert server.env == demo.env  # opened with the same keys
    assert [s.name for s in await store.mandates().servers("m1")] == ["crm"]
    assert (await store.grants.get("ada", "secure")).tokens["access_token"] == "at-imported"
    assert sorted(p.name for p in folder.rglob("*.json")) == [
        "ada.json",
        "bob.json",
        "m1.json",
        "secure.json",
    ]  # fmt: skip  (left as they are: the database records what it imported)
    async with store.db.session() as s:
        rows = json.dumps([str(r) for r in await s.execute(text("SELECT * FROM mcp_grants"))])
        rows += json.dumps([str(r) for r in await s.execute(text("SELECT * FROM mcp_servers"))])
    assert "at-imported" not in rows and demo.env["MCP_TEST_LOG"] not in rows  # still sealed

    from nyla_toolbox_mcp.file_import import import_files

    assert await import_files(store.db, folder, lambda: cipher) == 0  # once: nothing is left
    older = demo.model_copy(update={"timeout_s": 7})  # a file found later: the row is kept
    (folder / "eve.json").write_text(json.dumps([seal_server(older, cipher)]))
    await store.put("eve", demo)
    assert await import_files(store.db, folder, lambda: cipher) == 0
    assert (await store.get("eve", "demo")).timeout_s == demo.timeout_s
