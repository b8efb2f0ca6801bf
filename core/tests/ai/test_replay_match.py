"""The rules a replayed request is compared by, and what a recording file keeps out."""

from __future__ import annotations

import json
import uuid

from nyla.ai.recording_file import CassetteFile
from nyla.ai.replay_match import IdBinding, align, describe
from nyla.models.ai import ModelSpec

A, B, C = (str(uuid.uuid4()) for _ in range(3))


def test_ids_bind_one_to_one_across_calls():
    binding = IdBinding()
    assert align(f"wrote {A}", f"wrote {B}", binding)
    assert align(f"read {A} again", f"read {B} again", binding)
    # the recorded id now stands for B: another live id, or B for another recorded id, drifts
    assert not align(f"read {A}", f"read {C}", binding.copy())
    assert not align(f"read {C}", f"read {B}", binding.copy())
    assert binding.apply(f'{{"fileId": "{A}"}}') == f'{{"fileId": "{B}"}}'


def test_hex_ids_bind_and_text_around_them_must_match():
    rec, live = uuid.uuid4().hex, uuid.uuid4().hex
    assert align(f"run {rec} done", f"run {live} done", IdBinding())
    assert not align(f"run {rec} done", f"run {live} failed", IdBinding())
    assert not align(f"run {rec}", "run 42", IdBinding())


def test_timestamps_are_ignored_but_dates_are_data():
    prompt = "Current date and time: {} (Europe/Zurich, UTC+01:00)."
    assert align(
        prompt.format("Tuesday, 2026-12-01 09:30"),
        prompt.format("Friday, 2027-01-15 17:05"),
        IdBinding(),
    )
    assert align(
        '"createdAt": "2026-12-01T09:30:00.123+00:00"',
        '"createdAt": "2027-01-01T00:00:00Z"',
        IdBinding(),
    )
    assert not align("due 2026-12-01", "due 2026-12-02", IdBinding())
    assert not align("balance 1200.50", "balance 1200.55", IdBinding())


def request(**change):
    base = {
        "model": "openai:gpt-5",
        "operation": "agent",
        "messages": [
            {"role": "system", "content": "You are nyla."},
            {"role": "user", "content": "What is the VAT payable for Q2 2025?"},
        ],
        "tools": [{"name": "queryTable", "description": "Query a table", "parameters": {}}],
    }
    return {**base, **change}


def test_describe_names_the_first_difference():
    assert describe(request(), request(model="openai:gpt-4.1")) == (
        "model differs: recorded 'openai:gpt-5', now 'openai:gpt-4.1'"
    )
    assert describe(request(), request(tools=[])) == "tools differ: removed queryTable"
    changed = [{**t, "description": "Query"} for t in request()["tools"]]
    assert describe(request(), request(tools=changed)) == "tool 'queryTable' definition differs"
    asked = [*request()["messages"][:1], {"role": "user", "content": "What is the VAT for Q3?"}]
    assert describe(request(), request(messages=asked)) == (
        "message 1 (user) text differs: recorded 'What is the VAT payable for Q2 2025?', "
        "now 'What is the VAT for Q3?'"
    )
    longer = [*request()["messages"], {"role": "assistant", "content": "CHF 1."}]
    assert describe(request(), request(messages=longer)) == (
        "message count differs: recorded 2, now 3"
    )


def test_secrets_never_reach_the_file(tmp_path, monkeypatch):
    secret = "sk-live-0123456789abcdef"
    monkeypatch.setenv("SOME_VENDOR_API_KEY", secret)
    monkeypatch.setenv("NYLA_CONFIG", str(tmp_path / "none.toml"))
    path = tmp_path / "run.jsonl"
    file = CassetteFile.create(path, {"type": "header", "format": "nyla-recording", "version": 1})
    spec = ModelSpec(
        id="x:y",
        provider="x",
        name="y",
        operation_types=["agent"],
        context_window=1000,
        price_input_chf_per_mtok=1.0,
        price_output_chf_per_mtok=1.0,
    )
    pasted = {"role": "user", "content": f"my key is {secret}, why does it fail?"}
    file.append_call(spec, "chat", request(messages=[pasted]), {"response": {"content": "ok"}})
    file.close()
    written = path.read_text()
    assert secret not in written
    assert json.loads(written.splitlines()[-1])["request"]["messages"][0]["content"] == (
        "my key is [redacted], why does it fail?"
    )
    assert CassetteFile.load(path).models[0].id == "x:y"


def test_drift_names_a_changed_answer_option() -> None:
    from nyla.ai.replay_match import describe

    recorded = {"model": "m", "operation": "agent", "stop": ["END"], "messages": []}
    assert describe(recorded, {**recorded, "stop": ["STOP"]}).startswith("stop differs")
    live = {**recorded, "responseFormat": {"type": "json_object"}}
    assert describe(recorded, live).startswith("responseFormat differs")
