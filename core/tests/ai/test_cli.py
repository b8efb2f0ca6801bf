"""``nyla ai ask``, ``nyla ai neutralize`` and ``nyla models list`` through click's runner."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from nyla.cli import cli
from nyla.testing.scripted import ScriptedPlugin, ScriptedProvider


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def test_neutralize_prints_what_a_model_would_get(runner: CliRunner) -> None:
    text = "Mail anna@example.ch, AHV 756.1234.5678.97, again anna@example.ch\n"
    result = runner.invoke(cli, ["ai", "neutralize"], input=text)
    assert result.exit_code == 0, result.output
    assert result.output == "Mail [EMAIL_1], AHV [AHV_1], again [EMAIL_1]\n"
    result = runner.invoke(cli, ["ai", "neutralize", "--json"], input=text)
    data = json.loads(result.output)
    assert data["text"].startswith("Mail [EMAIL_1]")
    assert {"placeholder": "[AHV_1]", "category": "AHV", "value": "756.1234.5678.97"} in data[
        "placeholders"
    ]


def test_neutralize_starts_no_database(runner: CliRunner, monkeypatch, tmp_path) -> None:
    # a pure text transform: no embedded PostgreSQL is started (nor a server's self-check run)
    monkeypatch.delenv("NYLA_DATABASE_URL", raising=False)
    monkeypatch.setenv("NYLA_HOME", str(tmp_path / "home"))
    result = runner.invoke(cli, ["ai", "neutralize"], input="Mail anna@example.ch\n")
    assert result.exit_code == 0, result.output
    assert result.output == "Mail [EMAIL_1]\n"
    assert not (tmp_path / "home" / "pgdata").exists()


def test_ask_shows_answer_model_and_cost(runner, make_kernel, monkeypatch) -> None:
    provider = ScriptedProvider(lambda r, i: f"echo: {r.messages[-1].text}", id="s")
    kernel = make_kernel(ScriptedPlugin(provider))
    monkeypatch.setattr("nyla.ai.cli._kernel", lambda: kernel)
    result = runner.invoke(cli, ["ai", "ask", "hi there"])
    assert result.exit_code == 0, result.output
    assert "echo: hi there" in result.output
    assert "s:model" in result.output and "cost CHF" in result.output
    result = runner.invoke(cli, ["ai", "ask", "hi", "--json"])
    data = json.loads(result.output)
    assert data["model"] == "s:model" and data["costChf"] > 0
    result = runner.invoke(cli, ["ai", "ask", "one two three", "--stream"])
    assert result.exit_code == 0 and "echo: one two three" in result.output


def test_ask_without_any_model_says_what_to_configure(runner, make_kernel, monkeypatch) -> None:
    kernel = make_kernel(builtins=True)
    monkeypatch.setattr("nyla.ai.cli._kernel", lambda: kernel)
    result = runner.invoke(cli, ["ai", "ask", "hi"])
    assert result.exit_code == 1
    assert "no model for operation" in result.output and "nyla models list" in result.output
    assert "Traceback" not in result.output


def test_models_list_json_names_missing_keys(runner, monkeypatch, tmp_path) -> None:
    from nyla import config

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("NYLA_CONFIG", str(tmp_path / "none.toml"))
    config.reload()
    try:
        result = runner.invoke(cli, ["models", "list", "--json"])
        assert result.exit_code == 0, result.output
        models = {m["id"]: m for m in json.loads(result.output)}
        assert models["local:hash-384"]["available"] is True
        providers = {m["provider"] for m in models.values()}
        installed = {"openai", "anthropic", "mistral", "perplexity", "tavily", "private-llm"}
        for name in installed & providers:
            spec = next(m for m in models.values() if m["provider"] == name)
            assert spec["available"] is False and spec["unavailableReason"]
        if "openai" in providers:
            assert "OPENAI_API_KEY" in models["openai:gpt-5"]["unavailableReason"]
        result = runner.invoke(cli, ["models", "list", "--operation", "embedding", "--json"])
        assert all("embedding" in m["operationTypes"] for m in json.loads(result.output))
    finally:
        config.reload()


def test_ask_with_answer_options(runner, make_kernel, monkeypatch, tmp_path) -> None:
    """--stop, --json-object and --schema reach the model; a model without the capability
    is refused before anything is sent."""
    from nyla import ModelCapabilities

    provider = ScriptedProvider(lambda r, i: '{"total": 12} END rest', id="s")
    plain = ScriptedProvider(
        lambda r, i: "never", id="p", capabilities=ModelCapabilities(tools=True)
    )
    kernel = make_kernel(ScriptedPlugin(provider, plain))
    monkeypatch.setattr("nyla.ai.cli._kernel", lambda: kernel)
    schema = tmp_path / "invoice total.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"total": {"type": "number"}}}))
    result = runner.invoke(cli, ["ai", "ask", "total?", "--stop", " END", "--schema", str(schema)])
    assert result.exit_code == 0, result.output
    assert '{"total": 12}' in result.output and "rest" not in result.output
    sent = provider.requests[-1]
    assert sent.stop == [" END"]
    assert sent.response_format.name == "invoice_total"
    result = runner.invoke(cli, ["ai", "ask", "x", "--model", "p:model", "--json-object"])
    assert result.exit_code == 1 and "does not declare json_mode" in result.output
    assert plain.requests == []
    result = runner.invoke(cli, ["ai", "ask", "x", "--json-object", "--schema", str(schema)])
    assert result.exit_code == 2 and "exclude each other" in result.output


def test_models_list_shows_what_each_model_can_do(runner) -> None:
    from nyla import ModelCapabilities
    from nyla.commands.catalog import capability_names

    every = ScriptedProvider(lambda r, i: "x").spec
    assert capability_names(every) == "tools,stream,choice,stop,json,schema"
    plain = ScriptedProvider(lambda r, i: "x", capabilities=ModelCapabilities(vision=True)).spec
    assert capability_names(plain) == "vision"
    result = runner.invoke(cli, ["models", "list", "--operation", "agent"])
    assert result.exit_code == 0 and "can" in result.output, result.output
