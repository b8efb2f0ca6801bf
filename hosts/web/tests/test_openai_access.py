"""The OpenAI-compatible endpoint keeps the caller's model allow-list: ``/v1/models`` lists only
the agent configurations on it, a model off it is OpenAI's 404 and makes no run, and the
default agent (``nyla``) runs on an allowed model, recorded as the caller's host run."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.db

CHEAP = "cheap:small"


@pytest.fixture
def cheap(scripted):
    return scripted(lambda request, index: "cheap answer", id="cheap", model="small")


@pytest.fixture
def kernel(db, make_kernel, provider, cheap, memory_plugin, tmp_path):
    return make_kernel(
        provider,
        cheap,
        memory_plugin,
        db=db,
        settings={"knowledge": {"embedding_model": "scripted:model"}, "data_dir": tmp_path},
    )


async def test_the_allow_list_holds_on_v1(state, client, token_for, provider):
    alice = await token_for("alice")
    listed = (await client.get("/v1/models", headers=alice)).json()["data"]
    assert sorted(m["id"] for m in listed) == ["nyla", "nyla/cheap:small", "nyla/scripted:model"]

    await state.kernel.model_access.set("user", "alice", [CHEAP])
    listed = (await client.get("/v1/models", headers=alice)).json()["data"]
    assert [m["id"] for m in listed] == ["nyla", "nyla/cheap:small"]

    body = {"model": "nyla/scripted:model", "messages": [{"role": "user", "content": "hi"}]}
    refused = await client.post("/v1/chat/completions", json=body, headers=alice)
    assert refused.status_code == 404
    assert refused.json()["error"]["code"] == "model_not_found"
    assert (await client.get("/api/runs", headers=alice)).json()["runs"] == []

    before = len(provider.requests)
    body["model"] = "nyla"
    answer = await client.post("/v1/chat/completions", json=body, headers=alice)
    assert answer.status_code == 200, answer.text
    assert answer.json()["choices"][0]["message"]["content"] == "cheap answer"
    assert len(provider.requests) == before  # the better-ranked model was never asked
    run_id = answer.json()["id"].removeprefix("chatcmpl-")
    shown = (await client.get(f"/api/runs/{run_id}", headers=alice)).json()
    assert shown["trace"]["model"] == CHEAP
    assert shown["trace"]["context"]["allowedModels"] == [CHEAP]


async def test_no_key_is_openais_401(client):
    body = {"model": "nyla", "messages": [{"role": "user", "content": "hi"}]}
    answer = await client.post("/v1/chat/completions", json=body)
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == "Bearer"
    assert answer.json()["error"]["type"] == "authentication_error"
