"""Agent runs with a scripted model over the OAuth test server: signed in, the tool answers;
signed out, the same call is a structured ``SIGN_IN_REQUIRED`` telling the user how to sign
in, and the run finishes. No token ever reaches the model, the run's events or a log."""

from __future__ import annotations

import json
import logging

import anyio

import nyla_toolbox_mcp
from nyla.sdk import AgentConfig, ChatResponse, Role, RunContext, ToolCall
from nyla.testing import plugin_kernel
from nyla.testing.scripted import ScriptedProvider
from nyla_toolbox_mcp.cli import add_server
from nyla_toolbox_mcp.cli_oauth import login_flow
from nyla_toolbox_mcp.signin import sign_out

from .test_oauth import browser, secure

CALLS = [
    ("requestToolbox", {"toolboxId": "mcp:secure", "reason": "who am I"}),
    ("mcpSecure_whoami", {}),
]


async def _run(db, run_events, seen: list[str]):
    def script(request, index):
        results = [m for m in request.messages if m.role is Role.TOOL]
        seen.extend(m.text for m in request.messages if m.text)
        if len(results) < len(CALLS):
            name, args = CALLS[len(results)]
            call = ToolCall(id=f"c{len(results)}", name=name, arguments=json.dumps(args))
            return ChatResponse(tool_calls=[call])
        return "done"

    provider = ScriptedProvider(script, id="scripted", model="m")
    kernel = plugin_kernel(nyla_toolbox_mcp, provider, db=db, builtins=True)
    context = RunContext(user_id="ada", workflow_id="wf-oauth")
    config = AgentConfig(model="scripted:m", max_rounds=5, max_cost_chf=1.0)
    with anyio.fail_after(120):
        events = await run_events(kernel.agent.run("Who am I there?", config, context))
    return events


async def test_a_run_calls_an_oauth_server_and_tells_how_to_sign_in_without_one(
    run_events, store, oauth_base, caplog
):
    caplog.set_level(logging.DEBUG)
    await add_server(store, "ada", secure(oauth_base))
    await login_flow(store, "user", "ada", "secure", "ada", show=browser())
    grant = await store.grants.get("ada", "secure")
    secrets = [grant.tokens["access_token"], grant.refresh_token]

    seen: list[str] = []
    events = await _run(store.db, run_events, seen)
    results = [e.data for e in events if e.type == "TOOL_RESULT"]
    assert [(r["toolName"], r["success"]) for r in results] == [
        ("requestToolbox", True),
        ("mcpSecure_whoami", True),
    ]
    assert any("signed in with OAuth" in text for text in seen)  # what the model saw
    assert next(e for e in events if e.type == "FINAL").text == "done"

    await sign_out(store, "ada", "secure")
    events = await _run(store.db, run_events, seen)
    results = [e.data for e in events if e.type == "TOOL_RESULT"]
    failed = results[1]
    assert failed["toolName"] == "mcpSecure_whoami" and failed["success"] is False
    details = json.dumps(failed)
    assert "SIGN_IN_REQUIRED" in details and "nyla mcp login secure" in details
    assert next(e for e in events if e.type == "FINAL").text == "done"  # the run went on

    everything = "\n".join(seen) + json.dumps([e.data for e in events]) + caplog.text
    for secret in secrets:
        assert secret not in everything
