"""The plugins' settings sections on the host, with the MCP servers as the section: a user
adds, lists and removes their own server (the demo MCP server, a real stdio process); a
mandate admin adds one for the mandate, which every user of the mandate lists and no user
may change; another mandate sees none of it; bad input is a 400 with nothing stored."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from nyla.sdk import TokenCipher

DEMO = Path(__file__).parents[3] / "plugins/toolboxes/mcp/tests/demo_server.py"
BASE = "/api/settings/sections/mcp"
TOOLS = ["crash", "flood", "hang", "lookup", "note", "quote"]


@pytest.fixture
def kernel(db, make_kernel, provider, memory_plugin, tmp_path, monkeypatch):
    import nyla_toolbox_mcp

    monkeypatch.setenv("NYLA_MCP_DIR", str(tmp_path / "mcp"))
    monkeypatch.setenv("NYLA_SECRET_KEY", TokenCipher.generate_key())
    settings = {"knowledge": {"embedding_model": "scripted:model"}, "data_dir": tmp_path}
    return make_kernel(provider, memory_plugin, nyla_toolbox_mcp, db=db, settings=settings)


def _demo(name: str = "demo") -> dict:
    return {
        "name": name,
        "command": sys.executable,
        "args": [str(DEMO)],
        "env": {"MCP_TEST_LOG": "/dev/null"},
        "startTimeoutS": 120,
    }


async def test_a_users_own_servers_and_a_mandates_servers(client, token_for, tmp_path):
    alice = await token_for("alice", "user", "m1")
    admin = await token_for("mia", "mandateAdmin", "m1")
    eve = await token_for("eve", "mandateAdmin", "m2")
    sections = await client.get("/api/settings/sections", headers=alice)
    assert {"id": "mcp", "label": "MCP servers"} in sections.json()

    own = await client.post(f"{BASE}/user", json=_demo("mine"), headers=alice)
    assert own.status_code == 201, own.text
    assert sorted(own.json()["tools"]) == TOOLS and own.json()["env"] == ["MCP_TEST_LOG"]
    assert "/dev/null" not in own.text  # values are never answered
    listed = await client.get(f"{BASE}/user", headers=alice)
    assert [s["name"] for s in listed.json()] == ["mine"]
    assert (await client.get(f"{BASE}/user", headers=admin)).json() == []

    refused = await client.post(f"{BASE}/mandate", json=_demo("crm"), headers=alice)
    assert refused.status_code == 403
    added = await client.post(f"{BASE}/mandate", json=_demo("crm"), headers=admin)
    assert added.status_code == 201, added.text
    assert [s["name"] for s in (await client.get(f"{BASE}/mandate", headers=alice)).json()] == [
        "crm"
    ]
    assert (await client.get(f"{BASE}/mandate", headers=eve)).json() == []
    assert (await client.delete(f"{BASE}/mandate/crm", headers=alice)).status_code == 403
    assert (await client.delete(f"{BASE}/mandate/crm", headers=eve)).status_code == 404
    assert (await client.delete(f"{BASE}/mandate/crm", headers=admin)).status_code == 200
    assert (await client.get(f"{BASE}/mandate", headers=alice)).json() == []
    assert (await client.delete(f"{BASE}/user/mine", headers=alice)).status_code == 200
    assert (await client.get(f"{BASE}/user", headers=alice)).json() == []


async def test_the_catalog_lists_the_callers_servers_as_toolboxes(client, token_for):
    """``/api/toolboxes`` answers each caller's MCP servers (their own and their mandate's)
    as the toolboxes their runs get, never the plugin's placeholder, nor another's server."""
    alice = await token_for("alice", "user", "m1")
    admin = await token_for("mia", "mandateAdmin", "m1")
    eve = await token_for("eve", "user", "m2")
    assert (await client.post(f"{BASE}/user", json=_demo("mine"), headers=alice)).is_success
    assert (await client.post(f"{BASE}/mandate", json=_demo("crm"), headers=admin)).is_success

    async def toolboxes(headers: dict) -> dict:
        listed = (await client.get("/api/toolboxes", headers=headers)).json()["toolboxes"]
        return {t["id"]: t for t in listed}

    own = await toolboxes(alice)
    assert "mcp" not in own
    assert sorted(t.split("_", 1)[-1] for t in own["mcp:mine"]["tools"]) == TOOLS
    assert "mcp:crm" in own and "core" in own
    assert {"mcp:crm"} == {k for k in await toolboxes(admin) if k.startswith("mcp")}
    assert not {k for k in await toolboxes(eve) if k.startswith("mcp")}


@pytest.mark.parametrize(
    "body, reason",
    [
        ({"name": "x"}, "either command"),
        ({"name": "x", "command": "a", "url": "http://b"}, "either command"),
        ({"name": "Bad Name", "command": "a"}, "server name"),
        ({"name": "x", "url": "ftp://x"}, "http(s) URL"),
        ({"name": "x", "command": "a", "shell": True}, "unknown fields: shell"),
        ({"name": "x", "command": "/nonexistent/program"}, "could not list the tools"),
    ],
)
async def test_bad_input_is_refused_and_nothing_is_stored(client, token_for, body, reason):
    alice = await token_for("alice", "user", "m1")
    refused = await client.post(f"{BASE}/user", json=body, headers=alice)
    assert refused.status_code == 400 and reason in refused.json()["detail"], refused.text
    assert (await client.get(f"{BASE}/user", headers=alice)).json() == []


async def test_unknown_section_and_no_token(client, token_for):
    alice = await token_for("alice", "user", "m1")
    assert (await client.get("/api/settings/sections/nope/user", headers=alice)).status_code == 404
    assert (await client.get(f"{BASE}/user")).status_code == 401
