"""textToSpeech and speechToText through the AI service, at the HTTP wire of OpenAI's audio
endpoints (the workspace's OpenAI provider over fakes shaped like the documented answers:
``/v1/audio/speech`` answers the audio bytes; ``/v1/audio/transcriptions`` and
``/translations`` with ``response_format=verbose_json`` answer ``task``, ``language``,
``duration``, ``text``, ``segments``). The text spoken is neutralized, both are priced from
the model specs and charged, the budget is checked first, and a run that requires
neutralization never sends a recording to a vendor."""

from __future__ import annotations

import io
import json
import wave

import httpx
import pytest

from nyla.sdk import AgentConfig, ChatResponse, Role, RunContext, ToolCall
from nyla.testing import call_tool, plugin_kernel, tool_context
from nyla.testing.provider_wire import sdk_transport
from nyla.testing.scripted import ScriptedPlugin, ScriptedProvider

from .conftest import USER


def wav(seconds: float, rate: int = 16_000) -> bytes:
    """A silent mono 16-bit WAV of ``seconds``."""
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"\0\0" * int(seconds * rate))
    return out.getvalue()


class OpenAIAudio:
    """The three audio endpoints, recording what they were sent."""

    def __init__(self, heard: str = "Guten Tag, hier spricht Ada.", duration: float = 8.47):
        self.heard, self.duration = heard, duration
        self.calls: list[tuple[str, dict[str, str]]] = []
        self.speech = wav(2.0)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/v1/audio/speech":
            body = json.loads(request.content)
            self.calls.append((path, body))
            return httpx.Response(200, content=self.speech, headers={"content-type": "audio/wav"})
        if path in ("/v1/audio/transcriptions", "/v1/audio/translations"):
            fields = _form_fields(request)
            self.calls.append((path, fields))
            translate = path.endswith("translations")
            return httpx.Response(
                200,
                json={
                    "task": "translate" if translate else "transcribe",
                    "language": "english" if translate else "german",
                    "duration": self.duration,
                    "text": "Good day, this is Ada." if translate else self.heard,
                    "segments": [],
                },
            )
        return httpx.Response(404, json={"error": {"message": f"no route {path}"}})


def _form_fields(request: httpx.Request) -> dict[str, str]:
    """The text fields of a multipart body (the file part named ``file`` by its file name)."""
    boundary = request.headers["content-type"].split("boundary=")[1].encode()
    fields: dict[str, str] = {}
    for part in request.read().split(b"--" + boundary):
        head, _, value = part.partition(b"\r\n\r\n")
        if b'name="' not in head:
            continue
        name = head.split(b'name="')[1].split(b'"')[0].decode()
        if b"filename=" in head:
            fields[name] = head.split(b'filename="')[1].split(b'"')[0].decode()
            fields["fileBytes"] = str(len(value.removesuffix(b"\r\n")))
        else:
            fields[name] = value.removesuffix(b"\r\n").decode()
    return fields


def _kernel(db, wire, *extra):
    import nyla_provider_openai  # the test's provider; the toolbox never imports it
    import nyla_toolbox_media

    provider = nyla_provider_openai.OpenAIProvider(api_key="sk-test", transport=sdk_transport(wire))
    return plugin_kernel(nyla_toolbox_media, ScriptedPlugin(provider, *extra), db=db, builtins=True)


async def _recording(kernel, content=None, name="memo.wav", mime="audio/wav"):
    item = await kernel.files.save(
        name, content or wav(3.0), RunContext(user_id=USER), mime_type=mime
    )
    return item.id


async def test_text_is_spoken_saved_and_charged(db):
    wire = OpenAIAudio()
    kernel = _kernel(db, wire)
    text = "Please call ada.lovelace@example.com back tomorrow."
    args = {"text": text, "voice": "nova", "format": "wav", "name": "reminder"}
    got = await call_tool(kernel, "textToSpeech", args, user=USER)
    assert got.success, got.error
    [(path, body)] = wire.calls
    assert path == "/v1/audio/speech"
    assert body["model"] in ("tts-1", "tts-1-hd") and body["voice"] == "nova"
    assert body["response_format"] == "wav"
    assert "ada.lovelace@example.com" not in body["input"]  # neutralized before it left
    [saved] = got.data["files"]
    assert saved["name"] == "reminder.wav" and saved["mimeType"] == "audio/wav"
    stored = await kernel.files.read_bytes(saved["fileId"], RunContext(user_id=USER))
    assert stored == wire.speech
    per_million = 15.0 if body["model"] == "tts-1" else 30.0
    assert kernel.ai.totals().cost_chf == pytest.approx(len(body["input"]) * per_million / 1e6)


async def test_an_unknown_voice_is_a_clear_failure(db):
    wire = OpenAIAudio()
    got = await call_tool(
        _kernel(db, wire), "textToSpeech", {"text": "hi", "voice": "darth"}, user=USER
    )
    assert not got.success and "no voice 'darth'" in got.error
    assert wire.calls == []


async def test_a_recording_is_transcribed_and_charged_by_the_minute(db):
    wire = OpenAIAudio(duration=8.47)
    kernel = _kernel(db, wire)
    file_id = await _recording(kernel)
    got = await call_tool(kernel, "speechToText", {"fileId": file_id, "language": "de"}, user=USER)
    assert got.success, got.error
    assert got.content == "Guten Tag, hier spricht Ada."
    assert got.data == {"language": "german", "seconds": 8.47}
    [(path, fields)] = wire.calls
    assert path == "/v1/audio/transcriptions"
    assert fields["model"] == "whisper-1" and fields["language"] == "de"
    assert fields["response_format"] == "verbose_json"
    assert fields["file"] == "memo.wav" and int(fields["fileBytes"]) == len(wav(3.0))
    assert kernel.ai.totals().cost_chf == pytest.approx(8.47 / 60 * 0.006)


async def test_translate_to_english_uses_the_translations_endpoint(db):
    wire = OpenAIAudio()
    kernel = _kernel(db, wire)
    file_id = await _recording(kernel)
    args = {"fileId": file_id, "translateToEnglish": True}
    got = await call_tool(kernel, "speechToText", args, user=USER)
    assert got.success and got.content == "Good day, this is Ada."
    assert [path for path, _ in wire.calls] == ["/v1/audio/translations"]


async def test_a_file_that_is_no_recording_is_refused(db):
    wire = OpenAIAudio()
    kernel = _kernel(db, wire)
    file_id = await _recording(kernel, b"hello", name="notes.txt", mime="text/plain")
    got = await call_tool(kernel, "speechToText", {"fileId": file_id}, user=USER)
    assert got.error_details.code == "UNSUPPORTED_TYPE" and wire.calls == []


async def test_the_budget_is_checked_before_the_recording_is_sent(db):
    wire = OpenAIAudio()
    kernel = _kernel(db, wire)
    file_id = await _recording(kernel, wav(600.0, rate=8000))  # ten minutes: 0.06 CHF
    tool = next(t for t in kernel.plugins.toolboxes["media"].tools if t.name == "speechToText")
    ctx = tool_context(kernel, user=USER).model_copy(update={"remaining_budget_chf": 0.01})
    got = await tool.handler(tool.args_model(fileId=file_id), ctx)
    assert got.error_details.code == "BUDGET_EXCEEDED" and "0.060000 CHF" in got.error
    assert wire.calls == []


async def test_a_run_that_requires_neutralization_sends_no_recording(db):
    wire = OpenAIAudio()
    kernel = _kernel(db, wire)
    file_id = await _recording(kernel)
    tool = next(t for t in kernel.plugins.toolboxes["media"].tools if t.name == "speechToText")
    ctx = tool_context(kernel, user=USER)
    ctx = ctx.model_copy(
        update={"run": ctx.run.model_copy(update={"require_neutralization": True})}
    )
    got = await tool.handler(tool.args_model(fileId=file_id), ctx)
    assert got.error_details.code == "NEUTRALIZATION_REQUIRED"
    assert "on-premises" in got.error and wire.calls == []


def _script(request, index):
    results = [m for m in request.messages if m.role is Role.TOOL]
    if not results:
        args = {"text": "The meeting moves to Friday.", "name": "note", "format": "wav"}
        return ChatResponse(
            tool_calls=[ToolCall(id="t1", name="textToSpeech", arguments=json.dumps(args))]
        )
    if len(results) == 1:
        file_id = results[0].text.split("file id: ")[1].split()[0].strip(".,;)")
        return ChatResponse(
            tool_calls=[
                ToolCall(id="s1", name="speechToText", arguments=json.dumps({"fileId": file_id}))
            ]
        )
    return "Heard: " + results[1].text


async def test_a_scripted_run_speaks_and_listens(db):
    wire = OpenAIAudio(heard="The meeting moves to Friday.")
    scripted = ScriptedProvider(_script, id="scripted", model="m")
    kernel = _kernel(db, wire, scripted)
    context = RunContext(user_id=USER, workflow_id="wf-speech")
    config = AgentConfig(model="scripted:m", max_rounds=4, max_cost_chf=1.0)
    events = [e async for e in kernel.agent.run("Make a voice note.", config, context)]
    results = [e for e in events if e.type == "TOOL_RESULT"]
    assert [(e.data["toolName"], e.data["success"]) for e in results] == [
        ("textToSpeech", True),
        ("speechToText", True),
    ]
    final = next(e for e in events if e.type == "FINAL")
    assert final.text == "Heard: The meeting moves to Friday."
    assert [path for path, _ in wire.calls] == ["/v1/audio/speech", "/v1/audio/transcriptions"]
    _, fields = wire.calls[1]
    assert int(fields["fileBytes"]) == len(wire.speech)  # the file it made is what it heard


class MistralTranscriptions:
    """Mistral's ``POST /v1/audio/transcriptions`` (Voxtral): ``model``, ``text``,
    ``language``, ``segments`` and ``usage`` with ``prompt_audio_seconds``."""

    def __init__(self) -> None:
        self.calls: list[dict[str, str]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1/audio/transcriptions"
        self.calls.append(_form_fields(request))
        return httpx.Response(
            200,
            json={
                "model": "voxtral-mini-2507",
                "text": " Bonjour, ici Ada. ",
                "language": "fr",
                "segments": [],
                "usage": {
                    "prompt_audio_seconds": 12,
                    "prompt_tokens": 4,
                    "completion_tokens": 9,
                    "total_tokens": 13,
                },
            },
        )


def _mistral_kernel(db, wire):
    import nyla_provider_mistral  # the test's provider; the toolbox never imports it
    import nyla_toolbox_media

    provider = nyla_provider_mistral.MistralProvider(
        api_key="test-key", transport=sdk_transport(wire)
    )
    return plugin_kernel(nyla_toolbox_media, ScriptedPlugin(provider), db=db, builtins=True)


async def test_mistral_voxtral_transcribes_and_is_charged_by_the_seconds_it_reports(db):
    wire = MistralTranscriptions()
    kernel = _mistral_kernel(db, wire)
    file_id = await _recording(kernel)
    got = await call_tool(kernel, "speechToText", {"fileId": file_id, "language": "fr"}, user=USER)
    assert got.success, got.error
    assert got.content == "Bonjour, ici Ada." and got.data == {"language": "fr", "seconds": 12.0}
    [fields] = wire.calls
    assert fields["model"] == "voxtral-mini-latest" and fields["language"] == "fr"
    assert fields["file"] == "memo.wav"
    assert kernel.ai.totals().cost_chf == pytest.approx(12 / 60 * 0.002)


async def test_translation_needs_a_model_that_translates(db):
    wire = MistralTranscriptions()
    kernel = _mistral_kernel(db, wire)
    file_id = await _recording(kernel)
    args = {"fileId": file_id, "translateToEnglish": True}
    got = await call_tool(kernel, "speechToText", args, user=USER)
    assert got.error_details.code == "NOT_AVAILABLE" and "translates" in got.error
    assert wire.calls == []
