"""``nyla feature ...`` and ``nyla eval run`` through the real command line (offline, with a
scripted policy as the model), against the session's PostgreSQL."""

from __future__ import annotations

import json
import uuid

import pytest
from click.testing import CliRunner

from nyla.cli import cli

pytestmark = pytest.mark.db


@pytest.fixture
def scratch_database(embedded_pg):
    """A database of its own on the session's server: the CLI's kernel uses the default
    (public) schema, which must not leak into the per-test schemas of other tests."""
    import psycopg
    from sqlalchemy.engine import make_url

    name = f"cli_{uuid.uuid4().hex[:10]}"
    url = make_url(embedded_pg).set(drivername="postgresql")
    admin = url.render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield url.set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def runner(scratch_database, monkeypatch):
    monkeypatch.setenv("NYLA_DATABASE_URL", scratch_database)
    monkeypatch.delenv("NYLA_DISABLE_FEATURE_ONTOLOGY", raising=False)
    return CliRunner()


def test_feature_inspectors(runner):
    listed = runner.invoke(cli, ["feature", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    trustee = next(f for f in json.loads(listed.stdout) if f["code"] == "trustee")
    assert trustee["ontology"] and trustee["questions"] >= 25
    tables = runner.invoke(cli, ["feature", "tables", "trustee", "--json"])
    assert "closing_balance" in {f["name"] for t in json.loads(tables.stdout) for f in t["fields"]}
    prompt = runner.invoke(cli, ["feature", "prompt", "trustee"])
    assert "BANK_BALANCE_AT_DATE" in prompt.stdout
    legacy = runner.invoke(cli, ["feature", "prompt", "trustee", "--legacy"])
    assert "Domain hints" in legacy.stdout
    unknown = runner.invoke(cli, ["feature", "tables", "ledger"])
    assert unknown.exit_code != 0 and "unknown feature 'ledger'" in unknown.output
    questions = runner.invoke(cli, ["eval", "questions", "trustee", "--json"])
    assert len(json.loads(questions.stdout)) >= 25


def test_seed_then_eval_run_writes_the_report(runner, tmp_path):
    seeded = runner.invoke(cli, ["feature", "seed", "trustee", "--instance", "cli-acme", "--json"])
    assert seeded.exit_code == 0, seeded.output
    assert json.loads(seeded.stdout)["rows"]["journalEntries"] > 400
    ids = "q01_bank_balance_march,q21_invoice_re42_gross"
    args = ["eval", "run", "trustee", "--model", "eval:trap-regression"]
    args += ["--modes", "baseline,phase2", "--questions", ids, "--out", str(tmp_path)]
    result = runner.invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    summaries = {s["mode"]: s for s in report["summaries"]}
    assert summaries["baseline"]["accuracy"] == 0.5  # q01 is a summed-balance trap
    assert summaries["phase2"]["accuracy"] == 1.0
    assert summaries["phase2"]["repairConversionRate"] == 1.0
    md = tmp_path / report["reportFiles"]["markdown"].split("/")[-1]
    assert md.exists() and "| phase2 | 100.0 % |" in md.read_text()
    # the human form: a table in the terminal and the paths
    human = runner.invoke(
        cli, [*args[:-4], "--modes", "phase2", "--questions", ids, "--out", str(tmp_path)]
    )
    assert human.exit_code == 0, human.output
    assert "Repair conversion" in human.stdout and "report:" in human.stdout
    bad = runner.invoke(
        cli, ["eval", "run", "trustee", "--model", "eval:reference-replay", "--modes", "phase9"]
    )
    assert bad.exit_code != 0 and "unknown mode" in bad.output


def test_ask_the_data_agent_offline(runner):
    assert (
        runner.invoke(cli, ["feature", "seed", "trustee", "--instance", "ask-acme"]).exit_code == 0
    )
    question = "What is the VAT payable for Q2 2025?"
    result = runner.invoke(
        cli,
        [
            "feature",
            "ask",
            "trustee",
            question,
            "--instance",
            "ask-acme",
            "--model",
            "eval:reference-replay",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    from nyla_feature_trustee import TrusteeFeature

    expected = next(q for q in TrusteeFeature().benchmark_questions() if q.question == question)
    assert f"{expected.expected_numbers[0]:.2f}" in data["answer"]
    assert data["status"] == "completed" and len(data["calls"]) == 2
