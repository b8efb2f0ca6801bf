"""``nyla run --record FILE`` / ``--replay FILE`` end to end through the command line, with the
scripted provider recording and no provider at all replaying."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from nyla.cli import cli
from nyla.models.ai import ChatRequest, ChatResponse, Role, ToolCall, Usage
from nyla.plugins import PluginHost
from nyla.testing.scripted import ScriptedPlugin, ScriptedProvider

pytestmark = pytest.mark.db

PROMPT = "Save a note for anna.muster@acme.ch and check it."
SECRET = "sk-test-9f8e7d6c5b4a39281706"


def note_script(request: ChatRequest, index: int) -> ChatResponse:
    """Write a note, read it back by the id the write returned, then answer with its text;
    each turn reports its usage as a vendor does."""
    reply = _note_turn(request)
    reply.usage = Usage(input_tokens=1000 + 100 * index, output_tokens=20 + index)
    return reply


def _note_turn(request: ChatRequest) -> ChatResponse:
    results = [m for m in request.messages if m.role is Role.TOOL]
    if not results:
        asked = next(m.text for m in request.messages if m.role is Role.USER)
        args = {"name": "note.md", "content": f"Asked: {asked}"}
        return ChatResponse(
            tool_calls=[ToolCall(id="w1", name="writeFile", arguments=json.dumps(args))]
        )
    if len(results) == 1:
        file_id = results[0].text.split("file id: ")[-1].split()[0]
        return ChatResponse(
            tool_calls=[
                ToolCall(id="r1", name="readFile", arguments=json.dumps({"fileId": file_id}))
            ]
        )
    return ChatResponse(content=f"The note says: {results[-1].text.strip().splitlines()[-1]}")


class Cli:
    """Runs ``nyla`` with a chosen set of providers behind plugin discovery."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.monkeypatch = monkeypatch
        self.runner = CliRunner()

    def invoke(self, args: list[str], provider: ScriptedProvider | None = None):
        plugins = [ScriptedPlugin(provider)] if provider else []
        names = ["scripted"] if provider else []
        self.monkeypatch.setattr(
            PluginHost,
            "discover",
            classmethod(lambda cls, **kw: cls.from_plugins(plugins, builtins=True, names=names)),
        )
        return self.runner.invoke(cli, args)


@pytest.fixture
def nyla(monkeypatch, tmp_path, cli_database) -> Cli:
    monkeypatch.setenv("NYLA_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("NYLA_DATABASE_URL", cli_database)
    monkeypatch.setenv("NYLA_USER", "rita")
    monkeypatch.setenv("TEST_VENDOR_API_KEY", SECRET)
    from nyla import config

    config.reload()
    return Cli(monkeypatch)


def events(output: str) -> list[dict]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


def summary(evts: list[dict]) -> dict:
    return next(e for e in evts if e["type"] == "AGENT_SUMMARY")["data"]


def final(evts: list[dict]) -> str:
    return next(e for e in evts if e["type"] == "FINAL")["text"]


def tool_names(evts: list[dict]) -> list[str]:
    return [e["data"]["toolName"] for e in evts if e["type"] == "TOOL_CALL"]


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_record_then_replay_without_a_provider(nyla, tmp_path, stream):
    tape = tmp_path / "run.jsonl"
    flags = [] if stream else ["--no-stream"]
    provider = ScriptedProvider(note_script)
    recorded = nyla.invoke(
        ["run", PROMPT, "--json", "--record", str(tape), "--model", "scripted:model", *flags],
        provider,
    )
    assert recorded.exit_code == 0, recorded.output
    first = events(recorded.output)
    assert summary(first)["status"] == "completed"
    assert tool_names(first) == ["writeFile", "readFile"]
    assert "anna.muster@acme.ch" in final(first)  # the user gets the real text back

    lines = [json.loads(line) for line in tape.read_text().splitlines()]
    assert lines[0]["format"] == "nyla-recording" and lines[0]["version"] == 1
    calls = [entry for entry in lines if entry["type"] == "call"]
    assert [c["method"] for c in calls] == ["stream" if stream else "chat"] * 3
    assert all(c["model"] == "scripted:model" for c in calls)
    # requests as the provider got them: neutralized, with the tools it was offered
    assert "anna.muster@acme.ch" not in tape.read_text()
    assert "[EMAIL_1]" in calls[0]["request"]["messages"][-1]["content"]
    assert {"writeFile", "readFile"} <= {t["name"] for t in calls[0]["request"]["tools"]}
    assert SECRET not in tape.read_text()

    # no provider installed at all now: every answer comes from the file; the ids the rerun's
    # tools create are new, and the recorded readFile is pointed at the new note
    replayed = nyla.invoke(["run", PROMPT, "--json", "--replay", str(tape), *flags])
    assert replayed.exit_code == 0, replayed.output
    second = events(replayed.output)
    assert summary(second)["status"] == "completed"
    assert tool_names(second) == tool_names(first)
    assert final(second) == final(first)
    assert summary(second)["model"] == "scripted:model"
    for key in ("inputTokens", "outputTokens", "costChf"):  # the recorded usage, billed again
        assert summary(second)[key] == summary(first)[key]
    assert summary(first)["inputTokens"] == 1000 + 1100 + 1200
    results = [e["data"] for e in second if e["type"] == "TOOL_RESULT"]
    assert all(r["success"] for r in results), results


def test_a_streamed_recording_replays_without_streaming(nyla, tmp_path):
    tape = tmp_path / "run.jsonl"
    assert (
        nyla.invoke(["run", PROMPT, "--record", str(tape)], ScriptedProvider(note_script)).exit_code
        == 0
    )
    replayed = nyla.invoke(["run", PROMPT, "--json", "--no-stream", "--replay", str(tape)])
    assert replayed.exit_code == 0, replayed.output
    assert "anna.muster@acme.ch" in final(events(replayed.output))


def recorded_tape(nyla: Cli, tmp_path: Path) -> Path:
    tape = tmp_path / "run.jsonl"
    result = nyla.invoke(["run", PROMPT, "--record", str(tape)], ScriptedProvider(note_script))
    assert result.exit_code == 0, result.output
    return tape


def last_line(output: str) -> str:
    return output.strip().splitlines()[-1]


def test_a_changed_prompt_is_a_drift_at_the_first_call(nyla, tmp_path):
    tape = recorded_tape(nyla, tmp_path)
    result = nyla.invoke(["run", "Save a note for bob and check it.", "--replay", str(tape)])
    assert result.exit_code == 1
    line = last_line(result.output)
    assert line.startswith("Error: replay drift at model call 1: message 1 (user) text differs")
    assert "recorded 'Save a note for [EMAIL_1] and check it.', now 'Save a note for bob" in line


def test_an_edited_recording_is_a_drift_at_the_call_it_changes(nyla, tmp_path):
    tape = recorded_tape(nyla, tmp_path)

    def drop_read_file(calls, lines):
        tools = calls[1]["request"]["tools"]
        calls[1]["request"]["tools"] = [t for t in tools if t["name"] != "readFile"]

    edit_calls(tape, drop_read_file)
    result = nyla.invoke(["run", PROMPT, "--replay", str(tape)])
    assert result.exit_code == 1
    assert last_line(result.output) == (
        "Error: replay drift at model call 2: tools differ: added readFile"
    )


def edit_calls(tape: Path, edit) -> None:
    lines = [json.loads(line) for line in tape.read_text().splitlines()]
    edit([entry for entry in lines if entry["type"] == "call"], lines)
    tape.write_text("".join(json.dumps(entry) + "\n" for entry in lines))


def test_an_edited_answer_makes_the_rerun_drift_where_it_diverges(nyla, tmp_path):
    tape = recorded_tape(nyla, tmp_path)

    def rename(calls, lines):
        call = next(d["toolCall"] for d in calls[0]["deltas"] if d["kind"] == "tool_call")
        call["arguments"] = call["arguments"].replace("note.md", "other.md")

    edit_calls(tape, rename)
    result = nyla.invoke(["run", PROMPT, "--replay", str(tape)])
    assert result.exit_code == 1
    line = last_line(result.output)
    # the next request carries the edited call back to the model: it is not the recorded one
    assert line.startswith(
        "Error: replay drift at model call 2: message 2 (assistant) arguments of writeFile differ"
    )
    assert "note.md" in line and "other.md" in line


def test_a_run_that_ends_before_the_recording_does_drifted(nyla, tmp_path):
    tape = recorded_tape(nyla, tmp_path)
    edit_calls(tape, lambda calls, lines: lines.append({**calls[-1], "n": 4}))
    result = nyla.invoke(["run", PROMPT, "--replay", str(tape)])
    assert result.exit_code == 1
    assert last_line(result.output) == (
        "Error: replay drift: the run ended after 3 model calls, the recording has 4"
    )


def test_fewer_rounds_ask_something_else(nyla, tmp_path):
    tape = recorded_tape(nyla, tmp_path)
    result = nyla.invoke(["run", PROMPT, "--max-rounds", "1", "--replay", str(tape)])
    assert result.exit_code == 1
    assert "Error: replay drift at model call 2: " in last_line(result.output)


def test_a_model_outside_the_recording_is_refused(nyla, tmp_path):
    tape = recorded_tape(nyla, tmp_path)
    result = nyla.invoke(["run", PROMPT, "--model", "openai:gpt-5", "--replay", str(tape)])
    assert result.exit_code == 1
    assert "model 'openai:gpt-5' is not in the recording" in result.output


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no recording file"),
        ("", "is empty, not a nyla recording"),
        ('{"format": "nyla-recording", "version": 1}\n{"type": "call", "n"\n', ":2: not JSON"),
        ('{"hello": "world"}\n', ":1: not a nyla recording"),
        ('{"format": "nyla-recording", "version": 7}\n', "recording version 7"),
        (
            '{"format": "nyla-recording", "version": 1}\n{"type": "call", "method": "chat"}\n',
            ":2: broken call line",
        ),
    ],
    ids=["missing", "empty", "corrupt", "foreign", "too-new", "incomplete"],
)
def test_an_unusable_recording_is_one_clear_error(nyla, tmp_path, content, message):
    tape = tmp_path / "run.jsonl"
    if content is not None:
        tape.write_text(content)
    result = nyla.invoke(["run", PROMPT, "--replay", str(tape)])
    assert result.exit_code == 1
    assert message in result.output and str(tape) in result.output
    assert "Traceback" not in result.output


def test_record_and_replay_exclude_each_other(nyla, tmp_path):
    result = nyla.invoke(["run", PROMPT, "--record", "a.jsonl", "--replay", "b.jsonl"])
    assert result.exit_code == 2 and "exclude each other" in result.output


def test_an_unwritable_recording_fails_before_the_run(nyla, tmp_path):
    provider = ScriptedProvider(note_script)
    blocked = tmp_path / "file"
    blocked.write_text("")
    result = nyla.invoke(["run", PROMPT, "--record", str(blocked / "run.jsonl")], provider)
    assert result.exit_code == 1
    assert "cannot write the recording" in result.output and provider.requests == []
