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
    # asked as a user who may not run the agent: refused before any model call, exit code 3
    revoked = runner.invoke(cli, ["access", "revoke", "agent", "--user", "eve"])
    assert revoked.exit_code == 0, revoked.output
    as_eve = ["feature", "ask", "trustee", question, "--instance", "ask-acme", "--user", "eve"]
    refused = runner.invoke(cli, [*as_eve, "--model", "eval:reference-replay"])
    assert refused.exit_code == 3, refused.output
    assert "ServiceAccessDenied" in refused.output and "service.agent" in refused.output
    # a user whose mandate lost it is refused; the same user in another mandate is not
    runner.invoke(cli, ["access", "revoke", "agent", "--mandate", "m-off"])
    as_ann = ["feature", "ask", "trustee", question, "--instance", "ask-acme", "--user", "ann"]
    off = runner.invoke(cli, [*as_ann, "--mandate", "m-off", "--model", "eval:reference-replay"])
    assert off.exit_code == 3, off.output
    on = runner.invoke(cli, [*as_ann, "--mandate", "m-on", "--model", "eval:reference-replay"])
    assert on.exit_code == 0, on.output


def test_an_eval_recorded_once_is_rescored_offline(runner, tmp_path):
    ids = "q01_bank_balance_march,q21_invoice_re42_gross"
    base = ["eval", "run", "trustee", "--modes", "baseline,phase2", "--questions", ids, "--json"]
    tape = tmp_path / "tape"
    recorded = runner.invoke(
        cli,
        [
            *base,
            "--model",
            "eval:trap-regression",
            "--out",
            str(tmp_path / "a"),
            "--record",
            str(tape),
        ],
    )
    assert recorded.exit_code == 0, recorded.output
    files = sorted(p.name for p in tape.iterdir())
    assert files == [
        "baseline-q01_bank_balance_march.jsonl",
        "baseline-q21_invoice_re42_gross.jsonl",
        "phase2-q01_bank_balance_march.jsonl",
        "phase2-q21_invoice_re42_gross.jsonl",
    ]

    def scored(output: str) -> list[tuple]:
        report = json.loads(output)
        return [
            (r["mode"], r["id"], r["answer"], r["accuracyOk"], r["validationFailures"], r["rounds"])
            for r in report["results"]
        ]

    replayed = runner.invoke(
        cli,
        [
            *base,
            "--model",
            "eval:trap-regression",
            "--out",
            str(tmp_path / "b"),
            "--replay",
            str(tape),
        ],
    )
    assert replayed.exit_code == 0, replayed.output
    assert scored(replayed.stdout) == scored(recorded.stdout)
    assert [r[3] for r in scored(replayed.stdout)] == [False, True, True, True]

    # a question the recording does not hold, and an edited recording: each is a drift
    first = tape / "phase2-q21_invoice_re42_gross.jsonl"
    lines = first.read_text().splitlines()
    call = json.loads(lines[-1])
    call["request"]["messages"][0]["content"] += " Answer in French."
    lines[-1] = json.dumps(call)
    first.write_text("\n".join(lines) + "\n")
    drifted = runner.invoke(
        cli,
        [
            *base[:-3],
            "--questions",
            f"{ids},q02_bank_balance_june",
            "--json",
            "--model",
            "eval:trap-regression",
            "--out",
            str(tmp_path / "c"),
            "--replay",
            str(tape),
        ],
    )
    assert drifted.exit_code == 1
    report = json.loads(drifted.stdout)
    drift = report["replayDrift"]
    assert drift.startswith(
        "replay drift in baseline-q02_bank_balance_june: no recording "
        f"baseline-q02_bank_balance_june.jsonl in {tape}"
    )
    assert drift.endswith("(and 2 more)")
    errors = {(r["mode"], r["id"]): r["error"] for r in report["results"] if r["error"]}
    assert errors[("phase2", "q21_invoice_re42_gross")].endswith(
        "replay drift in phase2-q21_invoice_re42_gross at model call 3: message 0 (system) "
        "text differs: recorded '…this date. Answer in French.', now '…this date.'"
    )
    assert set(errors) == {
        ("baseline", "q02_bank_balance_june"),
        ("phase2", "q02_bank_balance_june"),
        ("phase2", "q21_invoice_re42_gross"),
    }
