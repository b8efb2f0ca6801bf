"""One recording file (JSON lines): writing calls as they happen, reading and matching them on
replay. The format is described in :mod:`nyla.ai.recording`."""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path
from typing import IO, Any

from nyla.ai.replay_match import IdBinding, align, canonical, describe
from nyla.errors import NylaError, ProviderError
from nyla.models.ai import ModelSpec

FORMAT = "nyla-recording"
VERSION = 1
_CHAT = ("chat", "stream")
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)


class RecordingFileError(NylaError):
    """A recording that cannot be used: missing, unreadable, not a recording, or too new."""


class ReplayDriftError(ProviderError):
    """A replayed run asked the model something the recording does not hold."""


def secret_values() -> list[str]:
    """Values of settings whose names say they are secret (environment and config file),
    longest first; they are blanked out of every recorded line."""
    from nyla.config import _file_values

    values = {v for k, v in os.environ.items() if _SECRET_NAME.search(k)}
    with contextlib.suppress(Exception):
        values |= {str(v) for k, v in _file_values().items() if _SECRET_NAME.search(k)}
    return sorted((v for v in values if len(v) >= 8), key=len, reverse=True)


class CassetteFile:
    """The calls of one run: appended while recording, taken one by one while replaying."""

    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        self.path = path
        self.header = header
        self.models: list[ModelSpec] = []
        self.calls: list[dict[str, Any]] = []
        self.used: set[int] = set()
        self.binding = IdBinding()
        self.chat_used = 0
        #: a call of this file did not match (its leftovers are no news then)
        self.drifted = False
        self._out: IO[str] | None = None
        self._secrets: list[str] = []

    # ---- writing ----------------------------------------------------------------------

    @classmethod
    def create(cls, path: Path, header: dict[str, Any]) -> CassetteFile:
        """A new file at ``path`` (replaced if it exists) holding ``header``."""
        file = cls(path, header)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            file._out = path.open("w", encoding="utf-8")
        except OSError as exc:
            raise RecordingFileError(f"cannot write the recording {path}: {exc}") from exc
        file._secrets = secret_values()
        file._write(header)
        return file

    def _write(self, value: dict[str, Any]) -> None:
        line = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        for secret in self._secrets:
            if secret in line:
                line = line.replace(secret, "[redacted]")
        assert self._out is not None
        self._out.write(line + "\n")
        self._out.flush()

    def append_call(
        self, spec: ModelSpec, method: str, request: dict[str, Any], entry: dict[str, Any]
    ) -> None:
        """Append one call (and the model's spec the first time it is used)."""
        if all(m.id != spec.id for m in self.models):
            self.models.append(spec)
            wire = spec.to_wire()
            wire.pop("available", None)
            wire.pop("unavailableReason", None)
            self._write({"type": "model", "spec": wire})
        call = {"type": "call", "n": len(self.calls) + 1, "method": method, "model": spec.id}
        call.update(request=request, **entry)
        self.calls.append(call)
        self._write(call)

    def close(self) -> None:
        """Close the file (recording)."""
        if self._out is not None:
            self._out.close()
            self._out = None

    # ---- reading ----------------------------------------------------------------------

    @classmethod
    def load(cls, path: Path) -> CassetteFile:
        """Read a recording; every problem is a :class:`RecordingFileError` naming the file
        (and line)."""
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            raise RecordingFileError(f"no recording file {path}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise RecordingFileError(f"cannot read the recording {path}: {exc}") from exc
        if not lines:
            raise RecordingFileError(f"{path} is empty, not a nyla recording")
        values = [_parse(path, number, line) for number, line in enumerate(lines, 1) if line]
        header = values[0]
        if header.get("format") != FORMAT:
            raise RecordingFileError(f"{path}:1: not a nyla recording (no {FORMAT!r} header)")
        version = header.get("version")
        if not isinstance(version, int) or version > VERSION:
            raise RecordingFileError(
                f"{path}: recording version {version!r}; this nyla reads version {VERSION}"
            )
        file = cls(path, header)
        for number, value in enumerate(values[1:], 2):
            kind = value.get("type")
            try:
                if kind == "model":
                    file.models.append(
                        ModelSpec.model_validate({**value["spec"], "available": True})
                    )
                elif kind == "call":
                    _check_call(value)
                    file.calls.append(value)
            except (KeyError, TypeError, ValueError) as exc:
                raise RecordingFileError(f"{path}:{number}: broken {kind} line: {exc}") from None
        return file

    def unused_chat(self) -> list[dict[str, Any]]:
        """Recorded chat calls no replayed call has taken."""
        return [c for i, c in enumerate(self.calls) if c["method"] in _CHAT and i not in self.used]

    def take(self, method: str, request: dict[str, Any]) -> tuple[dict[str, Any], IdBinding]:
        """The first unused recorded call of the same kind whose request matches ``request``,
        with the id binding it extends; :class:`ReplayDriftError` when none
        does."""
        chat = method in _CHAT
        kind = _CHAT if chat else (method,)
        if chat:
            self.chat_used += 1
        live = canonical(request)
        candidates = [
            (i, c) for i, c in enumerate(self.calls) if c["method"] in kind and i not in self.used
        ]
        for index, call in candidates:
            binding = self.binding.copy()
            if align(canonical(call["request"]), live, binding):
                self.used.add(index)
                self.binding = binding
                return call, binding
        raise self._drift(method, request, candidates)

    def _drift(self, method: str, request: dict[str, Any], candidates: list) -> Exception:
        self.drifted = True
        key = self.header.get("key")
        where = f" in {key}" if key else ""
        if method not in _CHAT:
            return ReplayDriftError(
                f"replay drift{where}: this {method} call ({request.get('model')}) is not in "
                f"the recording {self.path}"
            )
        total = sum(1 for c in self.calls if c["method"] in _CHAT)
        if not candidates:
            reason = f"the recording has only {total} model calls"
        else:
            reason = describe(candidates[0][1]["request"], request)
        return ReplayDriftError(f"replay drift{where} at model call {self.chat_used}: {reason}")


def _parse(path: Path, number: int, line: str) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        raise RecordingFileError(f"{path}:{number}: not JSON ({exc.msg})") from None
    if not isinstance(value, dict):
        raise RecordingFileError(f"{path}:{number}: not a JSON object")
    return value


def _check_call(value: dict[str, Any]) -> None:
    if value["method"] not in (*_CHAT, "embed", "webSearch"):
        raise ValueError(f"unknown method {value['method']!r}")
    if not isinstance(value["request"], dict):
        raise TypeError("request is not an object")
    if "error" not in value and "response" not in value and "deltas" not in value:
        raise ValueError("neither response, deltas nor error")
