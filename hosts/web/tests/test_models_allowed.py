"""The model allow-list, enforced on the server: GET /api/models lists only what the caller
may use, a run naming another model is a 403, and the kernel's selection (fallbacks, a run
without a model) stays inside the list (the CLI that manages it is tested in
core/tests/ai/test_model_access_cli.py). And one identity: ``nyla tokens create`` signs in the user every other command acts as."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
from click.testing import CliRunner

from nyla import AiCallRequest, Message, ModelNotAvailableError, OperationType, Role, RunContext
from nyla.sdk import ModelQuery

from .conftest import wait_run

pytestmark = pytest.mark.db

CHEAP = "cheap:small"


@pytest.fixture
def cheap_replies() -> list:
    return []


@pytest.fixture
def cheap(scripted, cheap_replies):
    def script(request, index):
        return cheap_replies[index] if index < len(cheap_replies) else "cheap answer"

    return scripted(script, id="cheap", model="small", quality_rank=1)


@pytest.fixture
def kernel(db, make_kernel, provider, cheap, memory_plugin, tmp_path):
    return make_kernel(
        provider,
        cheap,
        memory_plugin,
        db=db,
        settings={"knowledge": {"embedding_model": "scripted:model"}, "data_dir": tmp_path},
    )


async def model_ids(client, headers) -> tuple[list[str], str | None]:
    data = (await client.get("/api/models", headers=headers)).json()
    return sorted(m["id"] for m in data["models"]), data["default"]


async def test_the_list_and_the_runs_follow_the_allow_list(
    state, client, token_for, provider, cheap
):
    alice, bob = await token_for("alice"), await token_for("bob", mandate="m2")
    everything = await model_ids(client, alice)
    assert everything == (sorted([CHEAP, "scripted:model"]), "scripted:model")
    labels = (await client.get("/api/models", headers=alice)).json()["models"]
    assert all(m["label"] for m in labels)

    await state.kernel.model_access.set("user", "alice", [CHEAP])
    assert await model_ids(client, alice) == ([CHEAP], CHEAP)
    assert await model_ids(client, bob) == everything  # bob has no entry

    refused = await client.post(
        "/api/runs", json={"prompt": "hi", "model": "scripted:model"}, headers=alice
    )
    assert refused.status_code == 403
    assert "scripted:model" in refused.json()["detail"] and CHEAP in refused.json()["detail"]
    assert (await client.get("/api/conversations", headers=alice)).json()["conversations"] == []

    unknown = await client.post("/api/runs", json={"prompt": "hi", "model": "x:y"}, headers=bob)
    assert unknown.status_code == 400 and "unknown model" in unknown.json()["detail"]

    before = len(provider.requests)
    run = (await client.post("/api/runs", json={"prompt": "hi"}, headers=alice)).json()
    await wait_run(state, run["runId"])
    shown = (await client.get(f"/api/runs/{run['runId']}", headers=alice)).json()
    assert shown["finalText"] == "cheap answer" and shown["trace"]["model"] == CHEAP
    assert shown["trace"]["context"]["allowedModels"] == [CHEAP]
    assert len(provider.requests) == before  # the better-ranked model was never asked


async def test_a_tool_the_agent_calls_stays_inside_the_list(
    state, client, token_for, provider, cheap, cheap_replies
):
    # the agent (on the allowed model) calls an AI tool, which makes a model call of its own
    cheap_replies.extend([[("detectLanguage", {"text": "Grüezi mitenand"})], "de", "German."])
    await state.kernel.model_access.set("user", "alice", [CHEAP])
    alice = await token_for("alice")
    body = {"prompt": "Which language is 'Grüezi mitenand'?", "toolboxes": ["ai"]}
    run = (await client.post("/api/runs", json=body, headers=alice)).json()
    await wait_run(state, run["runId"])
    shown = (await client.get(f"/api/runs/{run['runId']}", headers=alice)).json()
    assert [c["toolName"] for c in shown["trace"]["toolCalls"]] == ["detectLanguage"]
    assert shown["trace"]["toolCalls"][0]["success"] is True
    assert len(cheap.requests) == 3 and shown["finalText"] == "German."
    assert provider.requests == []  # neither the agent nor its tool reached another model


async def test_user_and_mandate_entries_both_apply(state, client, token_for):
    access = state.kernel.model_access
    await access.set("mandate", "m1", [CHEAP, "scripted:model"])
    await access.set("user", "alice", ["scripted:model"])
    alice, carol = await token_for("alice"), await token_for("carol")
    outsider = await token_for("dave", mandate="m9")
    assert await model_ids(client, alice) == (["scripted:model"], "scripted:model")
    assert (await model_ids(client, carol))[0] == sorted([CHEAP, "scripted:model"])
    await access.set("mandate", "m1", [CHEAP])
    assert await model_ids(client, alice) == ([], None)  # nothing both allow
    assert (await model_ids(client, outsider))[0] == sorted([CHEAP, "scripted:model"])
    await access.set("mandate", "m1", [])
    await access.set("user", "alice", [])
    assert (await model_ids(client, alice))[0] == sorted([CHEAP, "scripted:model"])
    assert await access.entries() == []


async def test_the_selector_stays_inside_the_list(kernel):
    ask = [Message(role=Role.USER, content="hi")]
    inside = RunContext(user_id="alice", allowed_models=[CHEAP])
    response = await kernel.ai.call(
        AiCallRequest(operation=OperationType.AGENT, messages=ask, context=inside)
    )
    assert response.model == CHEAP  # the better-ranked scripted:model is not on the list
    chain = kernel.ai.selector.candidates(ModelQuery.for_call(OperationType.AGENT, inside))
    assert [s.id for s in chain] == [CHEAP]  # no fallback outside the list either
    with pytest.raises(ModelNotAvailableError, match="allow-list"):
        await kernel.ai.call(
            AiCallRequest(
                operation=OperationType.AGENT, messages=ask, context=inside, model="scripted:model"
            )
        )
    # embeddings are the knowledge store's choice, not restricted by the list
    vectors = await kernel.ai.embed(["x"], context=inside, model="scripted:model")
    assert len(vectors.vectors) == 1


async def test_user_context_carries_the_allow_list_to_every_run(kernel):
    await kernel.model_access.set("user", "erin", [CHEAP])
    context = await kernel.agent.user_context(RunContext(user_id="erin"))
    assert context.allowed_models == [CHEAP]
    explicit = await kernel.agent.user_context(RunContext(user_id="erin", allowed_models=[]))
    assert explicit.allowed_models == []  # a caller's own stricter list is kept


def _cli_env(db, monkeypatch) -> None:
    sep = "&" if "?" in db.url else "?"
    options = quote(f"-csearch_path={db.schema},public")
    monkeypatch.setenv("NYLA_DATABASE_URL", f"{db.url}{sep}options={options}")


def test_tokens_create_signs_in_the_clis_user(db, monkeypatch):
    from nyla_host.cli import tokens

    _cli_env(db, monkeypatch)
    monkeypatch.setenv("NYLA_USER", "hanna")
    created = CliRunner().invoke(tokens, ["create", "--json"])
    assert created.exit_code == 0, created.output
    assert json.loads(created.output)["userId"] == "hanna"
    monkeypatch.delenv("NYLA_USER")
    created = CliRunner().invoke(tokens, ["create", "--json"])
    assert json.loads(created.output)["userId"] == "local"


async def test_without_a_host_default_the_default_is_the_selectors_pick(state, client, token_for):
    state.settings.default_model = None
    alice = await token_for("alice")
    assert (await model_ids(client, alice))[1] == "scripted:model"  # the better-ranked one
    await state.kernel.model_access.set("user", "alice", [CHEAP])
    assert await model_ids(client, alice) == ([CHEAP], CHEAP)
