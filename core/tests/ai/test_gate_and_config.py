"""The neutralization gate inside the service, streamed re-personalization, offline token
counting, and configuration from the environment or the user config file."""

from __future__ import annotations

import socket
from typing import Any

import pytest

import nyla
from nyla import config
from nyla.ai.neutralize import NeutralizationSession, StreamRestorer
from nyla.ai.tokens import count_tokens
from nyla.errors import NeutralizationError
from nyla.models.agent import RunContext
from nyla.models.ai import AiCallRequest, Message, Role
from nyla.models.neutralize import Finding
from nyla.testing.scripted import ScriptedPlugin, ScriptedProvider


class Broken:
    id = "broken"

    def find(self, text: str) -> list[Finding]:
        raise RuntimeError("detector crashed")


class Liar:
    id = "liar"

    def find(self, text: str) -> list[Finding]:
        return [Finding(start=0, end=3, category="X", value="not the text")]


class Plugin:
    def __init__(self, *items: Any) -> None:
        self.items = items

    @nyla.hookimpl
    def nyla_neutralizers(self) -> list[Any]:
        return list(self.items)


def request(text: str, **kw: Any) -> AiCallRequest:
    return AiCallRequest(operation="agent", messages=[Message(role=Role.USER, content=text)], **kw)


@pytest.mark.parametrize("bad", [Broken(), Liar()])
async def test_required_neutralization_blocks_the_call(make_kernel, bad: Any) -> None:
    provider = ScriptedProvider(lambda r, i: "never")
    kernel = make_kernel(ScriptedPlugin(provider), Plugin(bad))
    ctx = RunContext(require_neutralization=True)
    with pytest.raises(NeutralizationError, match="blocked"):
        await kernel.ai.call(request("mail a@b.ch", context=ctx))
    assert provider.requests == []


async def test_optional_neutralization_failure_is_reported_and_others_still_apply(
    make_kernel,
) -> None:
    provider = ScriptedProvider(lambda r, i: "ok")
    kernel = make_kernel(ScriptedPlugin(provider), Plugin(Broken()))  # + built-in default
    response = await kernel.ai.call(request("mail anna@example.ch"))
    assert "anna@example.ch" not in provider.requests[0].messages[0].text
    errors = response.neutralization.errors
    assert errors and "broken" in errors[0]


async def test_required_without_any_neutralizer_blocks(make_kernel) -> None:
    provider = ScriptedProvider(lambda r, i: "never")
    kernel = make_kernel(ScriptedPlugin(provider), builtins=False)
    with pytest.raises(NeutralizationError, match="no neutralizer"):
        await kernel.ai.call(request("x", context=RunContext(require_neutralization=True)))


async def test_run_session_keeps_placeholders_across_calls_and_restores_answers(
    make_kernel,
) -> None:
    seen: list[str] = []

    def script(req, index):
        seen.append(req.messages[-1].text)
        return f"I will write to {req.messages[-1].text.split()[-1]}"

    kernel = make_kernel(ScriptedPlugin(ScriptedProvider(script)))
    session = NeutralizationSession()
    first = await kernel.ai.call(request("write to anna@example.ch", neutralization=session))
    second = await kernel.ai.call(request("again anna@example.ch", neutralization=session))
    assert seen == ["write to [EMAIL_1]", "again [EMAIL_1]"]
    assert first.content == second.content == "I will write to anna@example.ch"
    raw = await kernel.ai.call(
        request("to anna@example.ch", neutralization=session, restore_output=False)
    )
    assert raw.content == "I will write to [EMAIL_1]"


def test_stream_restorer_handles_placeholders_split_across_deltas() -> None:
    session = NeutralizationSession()
    placeholder = session.placeholder_for("EMAIL", "anna@example.ch")
    restorer = StreamRestorer(session)
    pieces = ["Mail ", placeholder[:3], placeholder[3:7], placeholder[7:] + " now [not a", "] x"]
    out = "".join(restorer.feed(p) for p in pieces) + restorer.flush()
    assert out == "Mail anna@example.ch now [not a] x"


def test_token_counting_needs_no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("token counting tried to open a network connection")

    monkeypatch.setattr(socket, "socket", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    english = "The quick brown fox jumps over the lazy dog. " * 20
    n = count_tokens(english)
    # tiktoken's cl100k counts 10 tokens per sentence: stay within 25 % of it
    assert 150 <= n <= 250
    messages = [
        Message(role=Role.USER, content=english),
        Message(role=Role.ASSISTANT, content="ok"),
    ]
    assert count_tokens(messages) > n
    assert count_tokens("") == 0
    assert count_tokens("Zürich") >= 1


def test_config_file_fills_in_what_the_environment_lacks(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "config.toml"
    path.write_text('OPENAI_API_KEY = "sk-file"\n[env]\nTAVILY_API_KEY = "tvly-file"\n')
    monkeypatch.setenv("NYLA_CONFIG", str(path))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-env")
    config.reload()
    try:
        assert config.config_value("OPENAI_API_KEY") == "sk-file"
        assert config.config_value("TAVILY_API_KEY") == "tvly-env"  # environment wins
        assert config.config_value("NOPE", "d") == "d"
        assert str(path) in config.missing_reason("NOPE")
        path.write_text("not = [valid toml")
        config.reload()
        assert config.config_value("OPENAI_API_KEY") is None  # unreadable file: ignored
    finally:
        config.reload()


async def test_default_model_per_operation_from_settings(make_kernel) -> None:
    a = ScriptedProvider(lambda r, i: "a", id="a")
    b = ScriptedProvider(lambda r, i: "b", id="b")
    a.spec.quality_rank = 99
    kernel = make_kernel(
        ScriptedPlugin(a, b), settings={"ai": {"default_models": {"agent": "b:model"}}}
    )
    assert (await kernel.ai.call(request("x"))).model == "b:model"
    assert kernel.ai.select_model("plan").id == "a:model"


def test_gate_reuses_a_run_s_earlier_results_but_never_partial_ones() -> None:
    from nyla.ai.default_neutralizer import DefaultNeutralizer
    from nyla.ai.neutralize import NeutralizationGate

    class Counting(DefaultNeutralizer):
        id = "counting"
        calls = 0

        def find(self, text: str) -> list[Finding]:
            Counting.calls += 1
            return super().find(text)

    session = NeutralizationSession()
    gate = NeutralizationGate([Counting()])
    text = "history: anna@example.ch wrote"
    first = gate.apply(text, session)
    assert gate.apply(text, session) == first == "history: [EMAIL_1] wrote"
    assert Counting.calls == 1
    assert NeutralizationGate([Counting()]).apply(text, NeutralizationSession()) == first
    assert Counting.calls == 2  # another session computes its own

    flaky = NeutralizationGate([Counting(), Broken()])
    flaky.apply("x anna@example.ch", session)
    flaky.apply("x anna@example.ch", session)
    assert Counting.calls == 4 and flaky.errors  # a result with a failed detector is redone
