"""Recorded runs: write every model call of a run to a file, and rerun the run from it offline.

``nyla run --record FILE`` / ``--replay FILE`` and ``nyla eval run --record DIR`` /
``--replay DIR`` (one file per question and mode) install a :class:`Tape` on the AI service
(``kernel.ai.tape``). While it is set, every provider the service resolves is wrapped:

- **record**: the real provider answers; each call is appended to the file as one JSON line —
  the request as the provider received it (after neutralization), the response (or streamed
  deltas, or the error), usage and model id. API keys never reach a request; as a second
  guard, the values of settings named like ``*KEY*``/``*TOKEN*``/``*SECRET*``/``*PASSWORD*``
  are blanked out of every line;
- **replay**: no provider is called. The service selects among the models of the recording,
  and each call is answered from the file once its request matches a recorded one (up to ids
  and timestamps, see :mod:`nyla.ai.replay_match`). The first call that matches none raises
  :class:`ReplayDriftError` naming the call and what differs; a run that ends before using
  every recorded chat call drifted too (:meth:`Tape.finish`).

File format (JSON lines, UTF-8): a header ``{"type": "header", "format": "nyla-recording",
"version": 1, ...}``,
then ``{"type": "model", "spec": ...}`` the first time a model is used, then ``{"type":
"call", "n": ..., "method": "chat"|"stream"|"embed"|"webSearch", ...}`` per call.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Iterator
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nyla import errors
from nyla.ai.recording_file import CassetteFile, RecordingFileError, ReplayDriftError
from nyla.ai.replay_match import IdBinding
from nyla.errors import ModelNotAvailableError, ProviderError
from nyla.models.ai import (
    ChatRequest,
    ChatResponse,
    EmbeddingResponse,
    ModelSpec,
    StreamDelta,
    WebSearchHit,
)
from nyla.version import __version__

__all__ = [
    "RecordingFileError",
    "ReplayDriftError",
    "Tape",
    "recording_key",
]

_KEY: ContextVar[str | None] = ContextVar("nyla_recording_key", default=None)
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


@contextlib.contextmanager
def recording_key(key: str) -> Iterator[None]:
    """Route the model calls made inside (this task and the tasks it starts) to the file
    ``<key>.jsonl`` of a directory tape (one file per eval question)."""
    token = _KEY.set(key)
    try:
        yield
    finally:
        _KEY.reset(token)


class Tape:
    """Record or replay the model calls of runs: one file, or a directory of files keyed by
    :func:`recording_key`. Install it as ``kernel.ai.tape``."""

    def __init__(self, path: str | Path, *, replaying: bool, directory: bool = False) -> None:
        self.path = Path(path)
        self.replaying = replaying
        self.directory = directory
        self._files: dict[str | None, CassetteFile] = {}
        #: drifts seen (a run may swallow the error; the command reports them)
        self.drifts: list[ReplayDriftError] = []
        self._touched: set[str | None] = set()
        if replaying:
            self._check_source()
        elif directory:
            try:
                self.path.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise RecordingFileError(f"cannot write recordings to {self.path}: {exc}") from exc
        else:  # at once: an unwritable path fails before the run, not after it
            self._files[None] = CassetteFile.create(self.path, _header(None))

    @classmethod
    def record(cls, path: str | Path, *, directory: bool = False) -> Tape:
        """A tape that writes what the real providers answer."""
        return cls(path, replaying=False, directory=directory)

    @classmethod
    def replay(cls, path: str | Path, *, directory: bool = False) -> Tape:
        """A tape that answers from the recording (raises :class:`RecordingFileError` when it
        is missing or unreadable)."""
        return cls(path, replaying=True, directory=directory)

    def _check_source(self) -> None:
        if self.directory:
            if not self.path.is_dir():
                raise RecordingFileError(f"no recording directory {self.path}")
            for file in sorted(self.path.glob("*.jsonl")):
                self._files[file.stem] = CassetteFile.load(file)
        else:
            self._files[None] = CassetteFile.load(self.path)

    # ---- the service's two questions: which models, which provider --------------------

    def models(self) -> list[ModelSpec]:
        """The models of the recording (replay), each available."""
        seen: dict[str, ModelSpec] = {}
        for file in self._files.values():
            for spec in file.models:
                seen.setdefault(spec.id, spec)
        return list(seen.values())

    def provider(self, spec: ModelSpec, live: Any) -> Any:
        """What answers calls to ``spec``: the live provider wrapped to record, or the
        recording."""
        if self.replaying:
            return _ReplayProvider(self, spec)
        if live is None:
            raise ModelNotAvailableError(f"provider {spec.provider!r} of {spec.id!r} is not loaded")
        return _RecordingProvider(self, spec, live)

    def cassette(self) -> CassetteFile:
        """The file of the current key (created when recording)."""
        # a directory tape keeps calls made outside any key in _outside.jsonl
        key = _SAFE.sub("_", _KEY.get() or "_outside") if self.directory else None
        self._touched.add(key)
        file = self._files.get(key)
        if file is None:
            if self.replaying:
                name = f"{key}.jsonl"
                raise self.note_drift(
                    ReplayDriftError(f"replay drift in {key}: no recording {name} in {self.path}")
                )
            target = self.path / f"{key}.jsonl" if key else self.path
            file = self._files[key] = CassetteFile.create(target, _header(key))
        return file

    def finish(self) -> None:
        """Close the files; when replaying, raise the first drift (with how many more), or a
        drift for recorded chat calls that the run never made."""
        for file in self._files.values():
            file.close()
        if not self.replaying:
            return
        for key, file in self._files.items():
            left = file.unused_chat() if key in self._touched and not file.drifted else []
            if left:
                where = f" in {key}" if key else ""
                self.note_drift(
                    ReplayDriftError(
                        f"replay drift{where}: the run ended after {file.chat_used} model "
                        f"calls, the recording has {file.chat_used + len(left)}"
                    )
                )
        if self.drifts:
            more = len(self.drifts) - 1
            first = min(str(d) for d in self.drifts)  # concurrent questions: a stable pick
            raise ReplayDriftError(f"{first} (and {more} more)" if more else first)

    def note_drift(self, error: ReplayDriftError) -> ReplayDriftError:
        """Keep ``error`` for :meth:`finish` and return it to raise."""
        self.drifts.append(error)
        return error


def _header(key: str | None) -> dict[str, Any]:
    header: dict[str, Any] = {
        "type": "header",
        "format": "nyla-recording",
        "version": 1,
        "nyla": __version__,
        "createdAt": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if key:
        header["key"] = key
    return header


def _error_wire(exc: BaseException) -> dict[str, Any]:
    return {
        "type": type(exc).__name__,
        "message": str(exc),
        "retryable": bool(getattr(exc, "retryable", False)),
        "statusCode": getattr(exc, "status_code", None),
    }


def _error_from(wire: dict[str, Any], provider: str) -> ProviderError:
    cls = getattr(errors, str(wire.get("type")), None)
    if not (isinstance(cls, type) and issubclass(cls, ProviderError)):
        cls = ProviderError
    try:
        return cls(str(wire.get("message", "")), provider=provider)
    except TypeError:
        return ProviderError(str(wire.get("message", "")), provider=provider)


class _RecordingProvider:
    """The live provider, with every call written to the tape."""

    def __init__(self, tape: Tape, spec: ModelSpec, live: Any) -> None:
        self.tape, self.spec, self.live, self.id = tape, spec, live, live.id

    def __getattr__(self, name: str) -> Any:
        return getattr(self.live, name)

    def models(self) -> list[ModelSpec]:
        return self.live.models()

    def _write(self, method: str, request: dict[str, Any], **entry: Any) -> None:
        self.tape.cassette().append_call(self.spec, method, request, entry)

    async def chat(self, request: ChatRequest) -> ChatResponse:
        wire = request.to_wire()
        try:
            response: ChatResponse = await self.live.chat(request)
        except Exception as exc:
            self._write("chat", wire, error=_error_wire(exc))
            raise
        self._write("chat", wire, response=response.to_wire(), usage=response.usage.to_wire())
        return response

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamDelta]:
        wire = request.to_wire()
        deltas: list[dict[str, Any]] = []
        try:
            async for delta in self.live.stream(request):
                deltas.append(delta.to_wire())
                yield delta
        except BaseException as exc:
            self._write("stream", wire, deltas=deltas, error=_error_wire(exc))
            raise
        usage = next((d["usage"] for d in reversed(deltas) if d.get("usage")), None)
        self._write("stream", wire, deltas=deltas, usage=usage)

    async def embed(self, model: str, texts: list[str]) -> EmbeddingResponse:
        request = {"model": model, "texts": texts}
        try:
            response: EmbeddingResponse = await self.live.embed(model, texts)
        except Exception as exc:
            self._write("embed", request, error=_error_wire(exc))
            raise
        self._write("embed", request, response=response.to_wire(), usage=response.usage.to_wire())
        return response

    async def web_search(self, model: str, query: str, max_results: int = 5) -> list[WebSearchHit]:
        request = {"model": model, "query": query, "maxResults": max_results}
        try:
            hits: list[WebSearchHit] = await self.live.web_search(model, query, max_results)
        except Exception as exc:
            self._write("webSearch", request, error=_error_wire(exc))
            raise
        self._write("webSearch", request, response=[h.to_wire() for h in hits])
        return hits


class _ReplayProvider:
    """Answers from the tape; never calls a vendor."""

    def __init__(self, tape: Tape, spec: ModelSpec) -> None:
        self.tape, self.spec, self.id = tape, spec, spec.provider

    def models(self) -> list[ModelSpec]:
        return [self.spec]

    def _match(self, method: str, request: dict[str, Any]) -> tuple[dict[str, Any], IdBinding]:
        file = self.tape.cassette()
        try:
            return file.take(method, request)
        except ReplayDriftError as exc:
            raise self.tape.note_drift(exc) from None

    def _answer(self, entry: dict[str, Any]) -> None:
        if entry.get("error") and not entry.get("deltas"):
            raise _error_from(entry["error"], self.spec.provider)

    async def chat(self, request: ChatRequest) -> ChatResponse:
        entry, binding = self._match("chat", request.to_wire())
        self._answer(entry)
        if "deltas" in entry:
            if entry.get("error"):
                raise _error_from(entry["error"], self.spec.provider)
            return _assemble(
                [StreamDelta.model_validate(binding.apply_deep(d)) for d in entry["deltas"]]
            )
        return ChatResponse.model_validate(binding.apply_deep(entry["response"]))

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamDelta]:
        entry, binding = self._match("stream", request.to_wire())
        self._answer(entry)
        if "deltas" in entry:
            for wire in entry["deltas"]:
                yield StreamDelta.model_validate(binding.apply_deep(wire))
            if entry.get("error"):
                raise _error_from(entry["error"], self.spec.provider)
            return
        for delta in _deltas(ChatResponse.model_validate(binding.apply_deep(entry["response"]))):
            yield delta

    async def embed(self, model: str, texts: list[str]) -> EmbeddingResponse:
        entry, _ = self._match("embed", {"model": model, "texts": texts})
        self._answer(entry)
        return EmbeddingResponse.model_validate(entry["response"])

    async def web_search(self, model: str, query: str, max_results: int = 5) -> list[WebSearchHit]:
        entry, _ = self._match(
            "webSearch", {"model": model, "query": query, "maxResults": max_results}
        )
        self._answer(entry)
        return [WebSearchHit.model_validate(h) for h in entry["response"]]


def _assemble(deltas: list[StreamDelta]) -> ChatResponse:
    """A streamed answer as one response (a streamed recording replayed without streaming)."""
    response = ChatResponse()
    for delta in deltas:
        if delta.kind == "text":
            response.content += delta.text
        elif delta.kind == "tool_call" and delta.tool_call is not None:
            response.tool_calls.append(delta.tool_call)
        else:
            response.usage = delta.usage or response.usage
            response.finish_reason = delta.finish_reason or response.finish_reason
            response.metadata.update(delta.metadata)
    return response


def _deltas(response: ChatResponse) -> Iterator[StreamDelta]:
    """A whole recorded answer as stream deltas (recorded without streaming, replayed with)."""
    if response.content:
        yield StreamDelta(kind="text", text=response.content)
    for call in response.tool_calls:
        yield StreamDelta(kind="tool_call", tool_call=call)
    yield StreamDelta(kind="usage", usage=response.usage)
    yield StreamDelta(kind="done", finish_reason=response.finish_reason, metadata=response.metadata)
