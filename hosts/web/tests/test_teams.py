"""The Teams bot's host part over HTTP: the messaging endpoint takes only activities the Bot
Connector service signed (401 otherwise, and nothing runs), answers arrive at the fake
Microsoft; the control panel's routes bind tenants, list conversations and transcripts,
keep and drop persistent directives and send one-shot director prompts — each within the
caller's own bindings. The plugin is found through its entry point, as ``nyla serve`` does."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path
from urllib.parse import quote

import pytest

from nyla.testing import import_file

pytestmark = pytest.mark.db

FAKE = Path(__file__).resolve().parents[3] / "plugins/features/teamsbot/tests/microsoft.py"
ms = import_file(FAKE, "teams_microsoft_fake")


@pytest.fixture
def microsoft():
    return ms.Microsoft()


@pytest.fixture
def replies():
    return ['{"needsAgent": false, "answer": "fast answer"}'] + ["agent answer"] * 20


@pytest.fixture
def kernel(db, make_kernel, provider, memory_plugin, tmp_path, monkeypatch):
    monkeypatch.setenv("NYLA_TEAMS_APP_ID", ms.APP_ID)
    monkeypatch.setenv("NYLA_TEAMS_APP_PASSWORD", ms.APP_PASSWORD)
    [found] = entry_points(group="nyla.features", name="teamsbot")
    return make_kernel(
        provider, memory_plugin, found.load(), db=db, settings={"data_dir": tmp_path}
    )


@pytest.fixture
def host_settings(microsoft):
    from nyla_host.state import HostSettings

    return HostSettings(
        default_model="scripted:model", extra={"teams_transport": microsoft.transport}
    )


def bot_of(state):
    return state.services["teams"]


async def post_activity(client, microsoft, body, authorization=...):
    header = microsoft.header() if authorization is ... else authorization
    headers = {"Authorization": header} if header else {}
    return await client.post("/api/teams/messages", json=body, headers=headers)


async def bind(client, token_for, tenant=ms.TENANT, mandate="m1"):
    admin = await token_for("root", role="mandateAdmin", mandate=mandate)
    made = await client.post(
        "/api/teams/bindings", headers=admin, json={"tenantId": tenant, "userId": "teams-service"}
    )
    assert made.status_code == 201, made.text
    return made.json(), admin


async def test_a_signed_activity_is_answered_in_its_chat(
    client, state, microsoft, token_for, provider
):
    await bind(client, token_for)
    body = ms.activity("groupChat", "What is nyla?")
    answered = await post_activity(client, microsoft, body)
    assert answered.status_code == 200 and answered.json() == {"outcome": "accepted"}
    await bot_of(state).drain()
    [sent] = microsoft.sent
    assert sent["conversation"] == ms.GROUP_ID and sent["replyTo"] == body["id"]
    assert sent["body"]["text"] == "fast answer"


@pytest.mark.parametrize("case", ["no header", "wrong audience", "expired", "unknown kid"])
async def test_an_unsigned_or_invalid_activity_is_401_and_runs_nothing(
    client, state, microsoft, token_for, provider, case
):
    await bind(client, token_for)
    bad = {
        "no header": None,
        "wrong audience": microsoft.header(aud="someone-else"),
        "expired": microsoft.header(exp=1_000_000, nbf=999_000),
        "unknown kid": f"Bearer {microsoft.token(key=microsoft.unlisted)}",
    }[case]
    refused = await post_activity(client, microsoft, ms.activity("personal", "hi"), bad)
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"] == "Bearer"
    assert refused.json() == {"detail": "the Bot Connector service's token does not hold"}
    await bot_of(state).drain()
    assert provider.requests == [] and microsoft.sent == []
    admin = await token_for("root", role="mandateAdmin", mandate="m1")
    assert (await client.get("/api/teams/conversations", headers=admin)).json() == []
    status = (await client.get("/api/teams/status", headers=admin)).json()
    assert status["lastRefusal"] and status["sinceStart"]["refused"] == 1


async def test_a_body_that_is_no_activity_is_400(client, microsoft):
    assert (await client.post("/api/teams/messages", content=b"{nope")).status_code == 400
    answer = await post_activity(client, microsoft, {"type": "message"})
    assert answer.status_code == 400


async def test_the_panel_directs_the_bot_within_the_callers_bindings(
    client, state, microsoft, token_for, provider
):
    binding, admin = await bind(client, token_for)
    await post_activity(client, microsoft, ms.activity("meeting", "hello from the meeting"))
    await bot_of(state).drain()
    [conversation] = (await client.get("/api/teams/conversations", headers=admin)).json()
    assert conversation["id"] == ms.MEETING_ID and conversation["kind"] == "meeting"
    path = quote(ms.MEETING_ID, safe="")

    kept = await client.post(
        "/api/teams/director",
        headers=admin,
        json={
            "prompt": "Always answer in English.",
            "persistent": True,
            "conversationId": ms.MEETING_ID,
        },
    )
    assert kept.status_code == 201, kept.text
    listed = await client.get(f"/api/teams/directives?conversationId={path}", headers=admin)
    assert [d["text"] for d in listed.json()] == ["Always answer in English."]

    once = await client.post(
        "/api/teams/director",
        headers=admin,
        json={"prompt": "Summarise the meeting so far", "conversationId": ms.MEETING_ID},
    )
    assert once.status_code == 202
    await bot_of(state).drain()
    directed = microsoft.sent[-1]
    assert directed["replyTo"] is None and directed["body"]["text"] == "agent answer"
    agent_prompt = "\n".join(
        m.content or "" for m in provider.requests[-1].messages if isinstance(m.content, str)
    )
    assert "Summarise the meeting so far" in agent_prompt
    assert "OPERATOR_DIRECTIVES" in agent_prompt and "Always answer in English." in agent_prompt

    lines = (await client.get(f"/api/teams/conversations/{path}/messages", headers=admin)).json()
    assert [line["source"] for line in lines] == ["user", "fastPath", "director"]

    # another mandate's admin sees none of it
    other = await token_for("eve", role="mandateAdmin", mandate="m2")
    assert (await client.get("/api/teams/conversations", headers=other)).json() == []
    assert (
        await client.get(f"/api/teams/conversations/{path}/messages", headers=other)
    ).status_code == 404
    directive_id = kept.json()["id"]
    assert (
        await client.delete(f"/api/teams/directives/{directive_id}", headers=other)
    ).status_code == 404
    assert (
        await client.post(
            "/api/teams/director",
            headers=other,
            json={"prompt": "leak it", "conversationId": ms.MEETING_ID},
        )
    ).status_code == 404

    # the user the bot runs as may operate it; a plain user of the mandate may not
    service = await token_for("teams-service", role="user", mandate="m1")
    assert len((await client.get("/api/teams/conversations", headers=service)).json()) == 1
    plain = (await client.get("/api/teams/status", headers=service)).json()
    assert "sinceStart" not in plain and "lastError" not in plain and "counts" not in plain
    bob = await token_for("bob", role="user", mandate="m1")
    assert (await client.get("/api/teams/conversations", headers=bob)).json() == []

    assert (
        await client.delete(f"/api/teams/directives/{directive_id}", headers=admin)
    ).status_code == 204
    assert (await client.get("/api/teams/directives", headers=admin)).json() == []
    status = (await client.get("/api/teams/status", headers=admin)).json()
    assert status["configured"] is True and status["sinceStart"]["director"] == 1
    assert [b["id"] for b in status["bindings"]] == [binding["id"]]


async def test_bindings_are_made_by_mandate_admins_for_their_own_mandate(client, token_for):
    user = await token_for("bob", role="user", mandate="m1")
    body = {"tenantId": ms.TENANT, "userId": "teams-service"}
    assert (await client.post("/api/teams/bindings", headers=user, json=body)).status_code == 403
    admin = await token_for("root", role="mandateAdmin", mandate="m1")
    foreign = {**body, "mandateId": "m2"}
    assert (
        await client.post("/api/teams/bindings", headers=admin, json=foreign)
    ).status_code == 403
    made = await client.post("/api/teams/bindings", headers=admin, json=body)
    assert made.status_code == 201 and made.json()["mandateId"] == "m1"
    twice = await client.post("/api/teams/bindings", headers=admin, json=body)
    assert twice.status_code == 409
    other = await token_for("eve", role="mandateAdmin", mandate="m2")
    gone = f"/api/teams/bindings/{made.json()['id']}"
    assert (await client.delete(gone, headers=other)).status_code == 404
    assert (await client.delete(gone, headers=admin)).status_code == 204


async def test_an_activity_of_an_unbound_tenant_runs_nothing(client, state, microsoft, provider):
    answer = await post_activity(client, microsoft, ms.activity("personal", "hi"))
    assert answer.json() == {"outcome": "unbound"}
    await bot_of(state).drain()
    assert provider.requests == [] and microsoft.sent == []


async def test_a_bot_whose_user_may_not_use_the_agent_says_so_and_calls_no_model(
    client, state, kernel, microsoft, token_for, provider
):
    _, admin = await bind(client, token_for)
    await kernel.service_access.set("user", "teams-service", "service.agent", False)
    answer = await post_activity(client, microsoft, ms.activity("groupChat", "hello"))
    assert answer.json() == {"outcome": "accepted"}
    await bot_of(state).drain()
    assert provider.requests == []
    [sent] = microsoft.sent
    assert "service.agent" in sent["body"]["text"]
    directed = await client.post(
        "/api/teams/director",
        headers=admin,
        json={"prompt": "Summarise", "conversationId": ms.GROUP_ID},
    )
    assert directed.status_code == 403 and "service.agent" in directed.json()["detail"]
    assert provider.requests == []
