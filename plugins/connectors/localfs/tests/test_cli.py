"""`nyla connections` and `nyla sync` on a local folder (the embedded PostgreSQL, its own
schema; the offline local embedder)."""

from __future__ import annotations

import json
import uuid
from typing import Any

from localfs_helpers import make_tree

from nyla.testing import invoke_cli


def test_connect_sync_status_and_remove_from_the_cli(embedded_pg, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("NYLA_DATABASE_URL", embedded_pg)
    monkeypatch.setenv("NYLA_DATABASE_SCHEMA", f"cli_{uuid.uuid4().hex[:8]}")
    monkeypatch.setenv("NYLA_EMBEDDING_MODEL", "local:hash-384")
    monkeypatch.setenv("NYLA_HOME", str(tmp_path / "home"))
    # the token key is made beside the configuration, not in NYLA_HOME: keep it in tmp too
    monkeypatch.setenv("NYLA_CONFIG", str(tmp_path / "config" / "config.toml"))
    make_tree(tmp_path / "docs", 12, per_folder=5)

    def run(*args: str) -> str:
        result = invoke_cli([*args, "--user", "ada"])
        assert result.exit_code == 0, result.output
        return result.stdout

    added = json.loads(
        run("connections", "add", "localfs", "--setting", f"root={tmp_path / 'docs'}", "--json")
    )
    conn = added["id"]
    assert json.loads(run("connections", "list", "--json"))[0]["service"] == "localfs"
    assert "ok in" in run("connections", "test", conn)
    synced = json.loads(run("sync", "run", conn, "--json"))
    assert synced["itemsIndexed"] == 12 and synced["sweep"].startswith("complete")
    status = json.loads(run("sync", "status", "--json"))
    assert status[0]["lastResult"]["itemsIndexed"] == 12
    assert "cancelled 0" in run("sync", "stop", "--connection", conn)
    assert "12 files" in run("connections", "remove", conn)
    assert json.loads(run("connections", "list", "--json")) == []
    tools = invoke_cli(["toolboxes", "list", "--json"])
    assert "searchDataSource" in tools.output and "datasources" in tools.output


def test_the_cli_connects_a_folder_only_when_it_can_be_listed(
    embedded_pg, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("NYLA_DATABASE_URL", embedded_pg)
    monkeypatch.setenv("NYLA_DATABASE_SCHEMA", f"cli_{uuid.uuid4().hex[:8]}")
    monkeypatch.setenv("NYLA_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NYLA_CONFIG", str(tmp_path / "config" / "config.toml"))
    make_tree(tmp_path / "docs", 2, per_folder=2)

    def add(*settings: str) -> Any:
        flags = [arg for s in settings for arg in ("--setting", s)]
        return invoke_cli(["connections", "add", "localfs", *flags, "--user", "ada"])

    bare = add()
    assert bare.exit_code != 0
    assert "localfs: Folder (root) is required" in bare.output
    missing = add(f"root={tmp_path / 'nope'}")
    assert missing.exit_code != 0
    assert "the connection was not saved" in missing.output and "is not a folder" in missing.output
    typo = add(f"root={tmp_path / 'docs'}", "depth=3")
    assert typo.exit_code != 0 and "no setting 'depth'" in typo.output
    listed = invoke_cli(["connections", "list", "--json", "--user", "ada"])
    assert json.loads(listed.stdout) == []
    made = add(f"root={tmp_path / 'docs'}")
    assert made.exit_code == 0, made.output
    assert made.stdout.startswith("connected localfs as conn-")
