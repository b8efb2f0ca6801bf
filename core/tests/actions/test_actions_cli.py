"""``nyla actions list``: the catalog as a table and as JSON (camelCase)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from nyla.cli import cli


def test_actions_list_json_holds_the_seed_methods():
    result = CliRunner().invoke(cli, ["actions", "list", "--json"])
    assert result.exit_code == 0, result.output
    methods = {m["name"]: m for m in json.loads(result.output)["methods"]}
    assert {"ai", "context"} <= set(methods)
    actions = {a["action"]: a for a in methods["ai"]["actions"]}
    assert set(actions) == {"process", "summarizeDocument"}
    summarize = actions["summarizeDocument"]
    assert summarize["tool"] == "ai_summarizeDocument" and summarize["writes"] is False
    assert summarize["parameters"]["required"] == ["fileId"]
    assert summarize["parameters"]["properties"]["maxWords"]["default"] == 150
    assert summarize["references"] == {"fileId": {"kind": "file", "many": False}}
    assert "featureCode" in methods["context"]


def test_actions_list_prints_a_table():
    result = CliRunner().invoke(cli, ["actions", "list"])
    assert result.exit_code == 0, result.output
    assert "context_extractContent" in result.output
    assert "fileId*" in result.output
