"""Service access through the kernel: rules stored and read back, a run refused without
``service.agent`` (the check the CLI and the host share), a tool refused in a run with a
structured ``PERMISSION_DENIED`` naming the permission (its handler never runs), and the
``nyla access`` commands with a refused ``nyla knowledge search`` (exit code 3, other errors 1)."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
from pydantic import BaseModel

from nyla.access.permissions import AGENT, CONNECTOR, KNOWLEDGE, ServiceAccessDenied, connector
from nyla.models.agent import AgentConfig, EventType, RunContext
from nyla.models.tools import Tool, Toolbox, ToolContext
from nyla.testing import invoke_cli

pytestmark = pytest.mark.db


class NoArgs(BaseModel):
    pass


def _box(tb_id: str, tool_name: str, ran: list[str], **kw) -> Toolbox:
    async def handler(args: BaseModel, ctx: ToolContext) -> str:
        ran.append(tool_name)
        return f"{tool_name} ran"

    tool = Tool.from_model(tool_name, tool_name, NoArgs, handler, read_only=True)
    return Toolbox(id=tb_id, tools=[tool], **kw)


async def test_rules_are_stored_and_decide_the_run(make_kernel, scripted, db):
    kernel = make_kernel(scripted(lambda r, i: "hi"), db=db)
    access = kernel.service_access
    await access.set("mandate", "m1", AGENT, False)
    await access.set("user", "carol", AGENT, True)
    await access.set("role", "user", KNOWLEDGE, False)
    rules = {(r.kind, r.subject, r.permission): r.allowed for r in await access.rules()}
    assert rules == {
        ("mandate", "m1", AGENT): False,
        ("user", "carol", AGENT): True,
        ("role", "user", KNOWLEDGE): False,
    }
    with pytest.raises(ServiceAccessDenied) as caught:
        await kernel.agent.user_context(RunContext(user_id="bob", mandate_id="m1"))
    assert caught.value.permission == AGENT
    # carol in the same mandate has her own grant; dave's role loses the knowledge store
    carol = await kernel.agent.user_context(RunContext(user_id="carol", mandate_id="m1"))
    assert carol.denied_services == []
    dave = await kernel.agent.user_context(RunContext(user_id="dave", role="user"))
    assert dave.denied_services == [KNOWLEDGE]
    assert await access.clear("role", "user", KNOWLEDGE) is True
    assert await access.clear("role", "user", KNOWLEDGE) is False
    dave = await kernel.agent.user_context(RunContext(user_id="dave", role="user"))
    assert dave.denied_services == []


async def test_a_tool_needing_a_revoked_service_is_refused_in_the_run(
    make_kernel, scripted, toolbox_plugin, db
):
    ran: list[str] = []
    mail = _box("mailbox", "listMail", ran, requires_connection="msft")
    notes = _box("notes", "readSection", ran)
    free = _box("free", "freeTool", ran)

    def script(request, index):
        if not any(m.role == "tool" for m in request.messages):
            return [("listMail", {}), ("readSection", {}), ("freeTool", {})]
        return "done"

    kernel = make_kernel(scripted(script), toolbox_plugin(mail, notes, free), db=db)
    await kernel.service_access.set("user", "bob", CONNECTOR, False)
    await kernel.service_access.set("user", "bob", KNOWLEDGE, False)
    context = await kernel.agent.user_context(RunContext(user_id="bob"))
    assert CONNECTOR in context.denied_services and KNOWLEDGE in context.denied_services
    config = AgentConfig(model="scripted:model", initial_toolboxes=["mailbox", "notes", "free"])
    events = [e async for e in kernel.agent.run("check", config, context)]
    results = {e.data["toolName"]: e.data for e in events if e.type is EventType.TOOL_RESULT}
    assert ran == ["freeTool"]  # the refused handlers never ran
    mail_result = results["listMail"]
    assert mail_result["success"] is False and connector("msft") in mail_result["error"]
    details = mail_result["errorDetails"]
    assert details["code"] == "PERMISSION_DENIED" and details["field"] == connector("msft")
    section = results["readSection"]["errorDetails"]
    assert (section["code"], section["field"]) == ("PERMISSION_DENIED", KNOWLEDGE)
    assert events[-1].data["status"] == "completed"
    # the same run for someone with every service: both run
    ran.clear()
    alice = await kernel.agent.user_context(RunContext(user_id="alice"))
    [e async for e in kernel.agent.run("check", config, alice)]
    assert sorted(ran) == ["freeTool", "listMail", "readSection"]


def _cli_env(db, monkeypatch) -> None:
    sep = "&" if "?" in db.url else "?"
    options = quote(f"-csearch_path={db.schema},public")
    monkeypatch.setenv("NYLA_DATABASE_URL", f"{db.url}{sep}options={options}")


def test_access_cli_grants_revokes_and_the_knowledge_cli_refuses(db, monkeypatch):
    _cli_env(db, monkeypatch)
    revoked = invoke_cli(["access", "revoke", "knowledge", "--user", "bob", "--json"])
    assert revoked.exit_code == 0, revoked.output
    assert json.loads(revoked.output) == {
        "kind": "user",
        "subject": "bob",
        "permission": KNOWLEDGE,
        "allowed": False,
    }
    refused = invoke_cli(["knowledge", "search", "invoices", "--user", "bob"])
    assert refused.exit_code == 3
    assert "ServiceAccessDenied" in refused.output and KNOWLEDGE in refused.output
    as_json = invoke_cli(["knowledge", "search", "invoices", "--user", "bob", "--json"])
    assert as_json.exit_code == 3
    assert json.loads(as_json.output)["error"]["type"] == "ServiceAccessDenied"
    assert "3 refused" in invoke_cli(["--help"]).output  # the exit code is documented
    shown = json.loads(invoke_cli(["access", "list", "--user", "bob", "--json"]).output)
    effective = {e["permission"]: e["allowed"] for e in shown["effective"]}
    assert effective[KNOWLEDGE] is False and effective[AGENT] is True
    granted = invoke_cli(["access", "grant", "service.knowledge", "--user", "bob"])
    assert granted.exit_code == 0 and "user bob may use service.knowledge" in granted.output
    shown = json.loads(invoke_cli(["access", "list", "--user", "bob", "--json"]).output)
    assert {e["permission"]: e["allowed"] for e in shown["effective"]}[KNOWLEDGE] is True
    role = invoke_cli(["access", "revoke", "connector.msft", "--role", "mandate-admin"])
    assert role.exit_code == 0 and "role mandateAdmin may not use" in role.output
    cleared = invoke_cli(["access", "clear", "connector.msft", "--role", "mandateAdmin"])
    assert "removed rule" in cleared.output
    bad = invoke_cli(["access", "grant", "service.admin", "--user", "bob"])
    assert bad.exit_code == 2 and "unknown permission" in bad.output
    both = invoke_cli(["access", "grant", "agent", "--user", "bob", "--mandate", "m"])
    assert both.exit_code == 2 and "exactly one" in both.output


def test_connector_sync_and_run_commands_refuse_without_the_service(db, monkeypatch):
    _cli_env(db, monkeypatch)
    invoke_cli(["access", "revoke", "connector.localfs", "--user", "eve"])
    invoke_cli(["access", "revoke", "knowledge", "--user", "eve"])
    added = invoke_cli(["connections", "add", "localfs", "--user", "eve", "--label", "x"])
    assert added.exit_code == 3 and "service.connector.localfs" in added.output
    listed = invoke_cli(["connections", "list", "--user", "eve", "--json"])
    assert json.loads(listed.output) == []  # nothing was stored
    synced = invoke_cli(["sync", "run", "ds-none", "--user", "eve"])
    assert synced.exit_code == 3 and "service.knowledge" in synced.output
    invoke_cli(["access", "grant", "knowledge", "--user", "eve"])
    missing = invoke_cli(["sync", "run", "ds-none", "--user", "eve"])
    assert missing.exit_code == 1, missing.output  # any other error stays 1


def test_nyla_run_refuses_a_user_without_the_agent(db, monkeypatch):
    from nyla.plugins import PluginHost
    from nyla.testing.scripted import ScriptedPlugin, ScriptedProvider

    _cli_env(db, monkeypatch)
    provider = ScriptedProvider(lambda request, index: "hello back")
    monkeypatch.setattr(
        PluginHost,
        "discover",
        classmethod(lambda cls, **kw: cls.from_plugins([ScriptedPlugin(provider)], builtins=True)),
    )
    invoke_cli(["access", "revoke", "agent", "--user", "eve"])
    ran = invoke_cli(["run", "--user", "eve", "--model", "scripted:model", "hello"])
    assert ran.exit_code == 3, ran.output
    assert "ServiceAccessDenied" in ran.output and "service.agent" in ran.output
    assert provider.requests == []  # refused before any model call
    invoke_cli(["access", "grant", "agent", "--user", "eve"])
    again = invoke_cli(["run", "--user", "eve", "--model", "scripted:model", "hello"])
    assert again.exit_code == 0 and "hello back" in again.output
