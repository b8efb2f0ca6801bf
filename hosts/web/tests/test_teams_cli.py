"""``nyla teams`` on a database of its own: status, bindings, directives and the errors a
mistyped id gets."""

from __future__ import annotations

import json

import pytest

from nyla.testing import invoke_cli

pytestmark = pytest.mark.db
TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"


@pytest.fixture(autouse=True)
def own_database(cli_database, monkeypatch, tmp_path):
    monkeypatch.setenv("NYLA_DATABASE_URL", cli_database)
    monkeypatch.setenv("NYLA_HOME", str(tmp_path))
    monkeypatch.delenv("NYLA_TEAMS_APP_ID", raising=False)
    monkeypatch.delenv("NYLA_TEAMS_APP_PASSWORD", raising=False)


def run(*args: str):
    result = invoke_cli(["teams", *args])
    return result


def test_status_says_what_is_missing():
    result = run("status", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["configured"] is False
    assert any("NYLA_TEAMS_APP_ID" in m for m in data["missing"])
    assert data["counts"] == {"bindings": 0, "conversations": 0, "messages": 0, "directives": 0}


def test_bindings_and_directives_round_trip():
    made = run("bindings", "add", TENANT, "--mandate", "m1", "--user", "teams-service", "--json")
    assert made.exit_code == 0, made.output
    binding = json.loads(made.output)
    assert (binding["tenantId"], binding["mandateId"]) == (TENANT, "m1")
    assert run("bindings", "add", TENANT, "--mandate", "m2", "--user", "x").exit_code == 1

    listed = run("bindings", "list")
    assert TENANT in listed.output and "teams-service" in listed.output

    kept = run(
        "directives", "add", "Always answer in English.", "--binding", binding["id"], "--json"
    )
    assert kept.exit_code == 0, kept.output
    directive = json.loads(kept.output)
    shown = run("directives", "list")
    assert "Always answer in English." in shown.output and "every conversation" in shown.output

    assert run("directives", "remove", directive["id"]).exit_code == 0
    assert run("directives", "remove", directive["id"]).exit_code == 1
    assert "no directives" in run("directives", "list").output
    assert run("bindings", "remove", binding["id"]).exit_code == 0
    assert "no tenant is bound" in run("bindings", "list").output


def test_mistyped_ids_are_clear_errors():
    unknown = run("direct", "19:nothing@thread.v2", "Summarise")
    assert unknown.exit_code == 1 and "no conversation 19:nothing@thread.v2" in unknown.output
    nowhere = run("directives", "add", "x")
    assert nowhere.exit_code == 1 and "--conversation or --binding" in nowhere.output
    assert "no conversations" in run("conversations").output


def test_the_commands_of_docs_teams_md_work_pasted():
    """Every ``nyla teams`` line of docs/teams.md, in the page's order, exits 0."""
    import shlex
    from pathlib import Path

    doc = Path(__file__).resolve().parents[3] / "docs" / "teams.md"
    commands = [
        shlex.split(line.split("$ .venv/bin/nyla ", 1)[1], comments=True)
        for line in doc.read_text().splitlines()
        if line.strip().startswith("$ .venv/bin/nyla teams")
    ]
    assert len(commands) >= 8
    for args in commands:
        result = invoke_cli(args)
        assert result.exit_code == 0, (args, result.output)
