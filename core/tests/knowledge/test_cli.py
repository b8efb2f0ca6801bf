"""``nyla knowledge`` end to end on the real database with the installed local embedder."""

from __future__ import annotations

import json
import uuid

import pytest
from click.testing import CliRunner

from nyla.cli import cli

from .conftest import DATA


@pytest.fixture
def cli_env(embedded_pg, monkeypatch):
    """Point the CLI's default database (the public schema) at the session's server; the
    test uses its own user ids so it shares nothing with other users of that schema."""
    monkeypatch.setenv("NYLA_DATABASE_URL", embedded_pg)
    monkeypatch.delenv("NYLA_EMBEDDING_MODEL", raising=False)
    return uuid.uuid4().hex[:8]


def _run(*args: str):
    result = CliRunner().invoke(cli, ["knowledge", *args], catch_exceptions=False)
    return result


def test_index_search_inventory_show_purge(cli_env, tmp_path):
    alice, bob = f"alice-{cli_env}", f"bob-{cli_env}"
    for name in ("sample.md", "sample.pdf", "encrypted.pdf"):
        (tmp_path / name).write_bytes((DATA / name).read_bytes())
    (tmp_path / ".hidden.txt").write_text("never indexed")
    result = _run("index", str(tmp_path), "--user", alice, "--model", "local:hash-384", "--json")
    assert result.exit_code == 1  # one file failed
    rows = {r["name"]: r for r in json.loads(result.output)}
    assert set(rows) == {"sample.md", "sample.pdf", "encrypted.pdf"}
    assert rows["sample.md"]["status"] == "indexed" and rows["sample.md"]["chunks"] >= 5
    assert rows["encrypted.pdf"]["status"] == "failed"
    assert rows["sample.md"]["embeddingModel"] == "local:hash-384"

    table_run = _run(
        "index", str(tmp_path / "sample.md"), "--user", alice, "--model", "local:hash-384"
    )
    assert table_run.exit_code == 0
    assert "indexed" in table_run.output and "1 of 1 files indexed" in table_run.output

    found = _run(
        "search",
        "quarterly VAT returns",
        "--user",
        alice,
        "--model",
        "local:hash-384",
        "--k",
        "3",
        "--json",
    )
    hits = json.loads(found.output)["hits"]
    assert hits and any("VAT" in h["text"] for h in hits)
    assert (
        _run("search", "VAT", "--user", bob, "--model", "local:hash-384", "--json").exit_code == 0
    )
    assert (
        json.loads(
            _run("search", "VAT", "--user", bob, "--model", "local:hash-384", "--json").output
        )["hits"]
        == []
    )
    pretty = _run("search", "payroll", "--user", alice, "--model", "local:hash-384")
    assert "hits" in pretty.output

    inv = json.loads(_run("inventory", "--user", alice, "--json").output)
    assert inv["totals"]["files"] == 3 and inv["totals"]["failedFiles"] == 1
    assert "knowledge inventory" in _run("inventory", "--level", "platform").output

    file_id = rows["sample.pdf"]["fileId"]
    shown = json.loads(_run("show", file_id, "--user", alice, "--json").output)
    assert len(shown["structure"]["pages"]) == 2
    assert _run("show", file_id, "--user", bob).exit_code != 0

    refused = _run("purge", "--owner", alice, "--actor", bob, "--json")
    assert refused.exit_code != 0 and "may not purge 3 of the 3" in refused.output
    purged = json.loads(_run("purge", "--owner", alice, "--actor", alice, "--json").output)
    assert purged["files"] == 3
    assert json.loads(_run("inventory", "--user", alice, "--json").output)["totals"]["files"] == 0
    assert _run("purge").exit_code != 0


def test_index_and_search_act_as_the_same_default_user(cli_env, tmp_path, monkeypatch):
    monkeypatch.setenv("NYLA_USER", f"dora-{cli_env}")
    (tmp_path / "note.md").write_text("The blue heron nests by the old mill pond every spring.")
    indexed = _run("index", str(tmp_path), "--model", "local:hash-384", "--json")
    assert indexed.exit_code == 0, indexed.output
    found = json.loads(
        _run("search", "heron mill pond", "--model", "local:hash-384", "--json").output
    )
    assert any(h["fileName"] == "note.md" for h in found["hits"])
    other = _run(
        "search", "heron mill pond", "--user", "nobody-else", "--model", "local:hash-384", "--json"
    )
    assert json.loads(other.output)["hits"] == []


@pytest.mark.parametrize("query", ["", "   ", "???", "!? ... ;"])
def test_a_query_without_words_is_a_clear_error_and_json_stays_valid(cli_env, query):
    result = _run("search", query, "--user", f"u-{cli_env}", "--json")
    assert result.exit_code == 1
    error = json.loads(result.stdout)["error"]
    assert error["type"] == "InvalidQueryError" and "no words" in error["message"]
    plain = _run("search", query, "--user", f"u-{cli_env}")
    assert plain.exit_code == 1 and "no words to search for" in plain.output
    assert "NaN" not in plain.output


def test_an_empty_store_and_an_empty_folder_say_so(cli_env, tmp_path):
    result = _run("search", "anything at all", "--user", f"new-{cli_env}")
    assert result.exit_code == 0
    assert "nothing is indexed yet" in result.output and "nyla knowledge index" in result.output
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / ".hidden.md").write_text("hidden")
    result = _run("index", str(tmp_path / "empty"), "--user", f"new-{cli_env}")
    assert result.exit_code == 1
    assert "no files found under" in result.output


def test_rerank_without_a_reranking_model_says_so(cli_env, tmp_path, monkeypatch):
    """``--rerank`` reaches the search: with no reranking model installed the answer names
    the missing operation instead of silently not reranking. With only the setting
    (``NYLA_KNOWLEDGE_RERANK=1``) a search goes on unreranked (the agent's context must not
    fail with it); ``--no-rerank`` overrides the setting."""
    user = f"rr-{cli_env}"
    (tmp_path / "note.md").write_text("The blue heron nests by the old mill pond every spring.")
    assert _run("index", str(tmp_path), "--user", user, "--model", "local:hash-384").exit_code == 0
    asked = _run("search", "heron", "--user", user, "--model", "local:hash-384", "--rerank")
    assert asked.exit_code == 1 and "rerank" in asked.output
    monkeypatch.setenv("NYLA_KNOWLEDGE_RERANK", "1")
    setting = _run("search", "heron", "--user", user, "--model", "local:hash-384", "--json")
    assert setting.exit_code == 0, setting.output
    found = json.loads(setting.stdout)
    assert found["rerankedBy"] is None and found["hits"][0]["fileName"] == "note.md"
    asked = _run("search", "heron", "--user", user, "--model", "local:hash-384", "--rerank")
    assert asked.exit_code == 1 and "rerank" in asked.output
    off = _run("search", "heron", "--user", user, "--model", "local:hash-384", "--no-rerank")
    assert off.exit_code == 0 and "note.md" in off.output
