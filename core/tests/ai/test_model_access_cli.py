"""``nyla models allow`` / ``nyla models allowed``: the model allow-list in the database,
checked against the installed models, with --json."""

from __future__ import annotations

import json
import uuid
from urllib.parse import quote

import pytest
from click.testing import CliRunner

from nyla.cli import cli
from nyla.plugins import PluginHost

pytestmark = pytest.mark.db


def _cli_env(db, monkeypatch) -> None:
    sep = "&" if "?" in db.url else "?"
    options = quote(f"-csearch_path={db.schema},public")
    monkeypatch.setenv("NYLA_DATABASE_URL", f"{db.url}{sep}options={options}")


def test_models_allow_cli(db, monkeypatch):
    _cli_env(db, monkeypatch)
    installed = sorted(s.id for s in PluginHost.discover(strict=False).models())
    assert installed, "no provider plugin installed"
    user = f"u-{uuid.uuid4().hex[:8]}"
    runner = CliRunner()
    allowed = runner.invoke(cli, ["models", "allow", "--user", user, installed[0], "--json"])
    assert allowed.exit_code == 0, allowed.output
    assert json.loads(allowed.output) == {
        "kind": "user",
        "subject": user,
        "models": installed[:1],
        "providers": [],
    }
    shown = runner.invoke(cli, ["models", "allowed", "--user", user, "--json"])
    assert json.loads(shown.output)["models"] == installed[:1]
    listed = json.loads(runner.invoke(cli, ["models", "allowed", "--json"]).output)
    assert {"kind": "user", "subject": user, "models": installed[:1], "providers": []} in listed
    unknown = runner.invoke(cli, ["models", "allow", "--user", user, "no:such-model"])
    assert unknown.exit_code == 1 and "unknown model no:such-model" in unknown.output
    both = runner.invoke(cli, ["models", "allow", "--user", user, "--mandate", "m", "x"])
    assert both.exit_code == 2 and "exactly one" in both.output
    mandate = f"m-{user}"
    runner.invoke(cli, ["models", "allow", "--mandate", mandate, installed[-1]])
    only = json.loads(
        runner.invoke(cli, ["models", "allowed", "--mandate", mandate, "--json"]).output
    )
    assert only == [
        {"kind": "mandate", "subject": mandate, "models": installed[-1:], "providers": []}
    ]
    if installed[0] != installed[-1]:  # the user's and the mandate's lists share nothing
        shared = runner.invoke(cli, ["models", "allowed", "--user", user, "--mandate", mandate])
        assert "may use: no model" in shared.output
    runner.invoke(cli, ["models", "allow", "--mandate", mandate, "--all"])
    cleared = runner.invoke(cli, ["models", "allow", "--user", user, "--all"])
    assert cleared.exit_code == 0 and "every model" in cleared.output
    again = runner.invoke(cli, ["models", "allowed", "--user", user, "--json"])
    assert json.loads(again.output)["models"] is None
