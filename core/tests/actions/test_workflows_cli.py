"""``nyla workflows list|show``: the user's workflows as a table and as JSON (camelCase);
another user's workflow is not shown."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from nyla.cli import cli
from nyla.db import Database
from nyla.kernel import Kernel
from nyla.models.agent import RunContext
from nyla.models.workflows import WorkflowConnection

pytestmark = pytest.mark.db


@pytest.fixture
async def stored(monkeypatch, tmp_path, cli_database):
    monkeypatch.setenv("NYLA_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("NYLA_DATABASE_URL", cli_database)
    monkeypatch.setenv("NYLA_USER", "rita")
    from nyla import config

    config.reload()
    kernel = Kernel(db=Database(cli_database))
    try:
        rita = RunContext(user_id="rita")
        wf = await kernel.workflows.create("Digest", rita)
        await kernel.workflows.add_node(wf.id, "ai", "process", {"prompt": "Sum up"}, rita)
        await kernel.workflows.add_node(wf.id, "context", "neutralizeData", {}, rita)
        link = WorkflowConnection(from_node="n1", to_node="n2", to_parameter="text")
        await kernel.workflows.connect(wf.id, link, rita)
        other = await kernel.workflows.create("Theirs", RunContext(user_id="otto"))
    finally:
        await kernel.aclose()
    return wf.id, other.id


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_list_and_show_as_json(stored):
    mine, _theirs = stored
    listed = invoke("workflows", "list", "--json")
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.output)["workflows"]
    assert [(r["id"], r["name"], r["nodes"], r["connections"]) for r in rows] == [
        (mine, "Digest", 2, 1)
    ]
    shown = invoke("workflows", "show", mine, "--json")
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.output)
    assert [n["id"] for n in data["nodes"]] == ["n1", "n2"]
    assert data["connections"] == [{"fromNode": "n1", "toNode": "n2", "toParameter": "text"}]
    assert data["problems"] == []


def test_tables_and_another_users_workflow(stored):
    mine, theirs = stored
    listed = invoke("workflows", "list")
    assert listed.exit_code == 0 and mine in listed.output and theirs not in listed.output
    shown = invoke("workflows", "show", mine)
    assert shown.exit_code == 0 and "ai.process" in shown.output and "prompt=Sum up" in shown.output
    refused = invoke("workflows", "show", theirs)
    assert refused.exit_code == 1 and "not found" in refused.output
    assert invoke("workflows", "show", theirs, "--user", "otto").exit_code == 0
