"""How a replayed request is compared with the recorded one (used by :mod:`nyla.ai.recording`).

A rerun of the same agent is not byte-identical: the tools it calls really run again, so a
file written in the run gets a new id, and the system prompt states the current time. Two
kinds of values are therefore *volatile*:

- **ids** (UUIDs, 32-hex ids): each recorded id must correspond to one live id throughout the
  run (and no two recorded ids to the same live one). The binding is learned from the requests
  and applied to the recorded answers, so a recorded ``readFile(fileId=<old id>)`` reads the
  file this rerun wrote;
- **timestamps** (``2026-12-01 09:30``, ISO date-times, with an optional weekday in front):
  ignored.

Everything else must be equal; the first difference is described in one line.
"""

from __future__ import annotations

import json
import re
from typing import Any

_WEEKDAY = r"(?:(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day, )?"
_DATETIME = (
    _WEEKDAY + r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"
)
_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_HEX_ID = r"(?<![0-9a-fA-F])[0-9a-f]{32}(?![0-9a-fA-F])"
VOLATILE = re.compile(f"(?P<time>{_DATETIME})|(?P<id>{_UUID}|{_HEX_ID})")
ID = re.compile(f"{_UUID}|{_HEX_ID}")


class IdBinding:
    """Recorded id -> live id, one to one, learned call by call."""

    def __init__(self) -> None:
        self.forward: dict[str, str] = {}
        self.backward: dict[str, str] = {}

    def copy(self) -> IdBinding:
        """An independent copy (a tentative match extends a copy, kept only on success)."""
        other = IdBinding()
        other.forward, other.backward = dict(self.forward), dict(self.backward)
        return other

    def bind(self, recorded: str, live: str) -> bool:
        """Bind ``recorded`` to ``live``; False when either is already bound elsewhere."""
        if (
            self.forward.get(recorded, live) != live
            or self.backward.get(live, recorded) != recorded
        ):
            return False
        self.forward[recorded] = live
        self.backward[live] = recorded
        return True

    def apply(self, text: str) -> str:
        """``text`` (from the recording) with every bound id replaced by its live id."""
        if not self.forward or not text:
            return text
        return ID.sub(lambda m: self.forward.get(m.group(0), m.group(0)), text)

    def apply_deep(self, value: Any) -> Any:
        """:meth:`apply` over every string of a JSON value."""
        if isinstance(value, str):
            return self.apply(value)
        if isinstance(value, list):
            return [self.apply_deep(v) for v in value]
        if isinstance(value, dict):
            return {k: self.apply_deep(v) for k, v in value.items()}
        return value


def canonical(value: Any) -> str:
    """One stable string for a JSON value (sorted keys, no spaces)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def align(recorded: str, live: str, binding: IdBinding) -> bool:
    """Whether ``live`` equals ``recorded`` up to volatile values; binds the ids it pairs."""
    if recorded == live:
        return all(binding.bind(token, token) for token in ID.findall(recorded))
    rec_parts, live_parts = _split(recorded), _split(live)
    if len(rec_parts) != len(live_parts):
        return False
    for (rec_kind, rec), (live_kind, now) in zip(rec_parts, live_parts, strict=True):
        if rec_kind != live_kind:
            return False
        if rec_kind == "text" and rec != now:
            return False
        if rec_kind == "id" and not binding.bind(rec, now):
            return False
    return True


def _split(text: str) -> list[tuple[str, str]]:
    parts: list[tuple[str, str]] = []
    last = 0
    for match in VOLATILE.finditer(text):
        parts.append(("text", text[last : match.start()]))
        parts.append((match.lastgroup or "text", match.group(0)))
        last = match.end()
    parts.append(("text", text[last:]))
    return parts


def normalized(text: str) -> str:
    """``text`` with volatile values shown as ``<id>`` / ``<time>`` (for messages)."""
    return VOLATILE.sub(lambda m: f"<{m.lastgroup}>", text)


def _snippet(text: str, at: int, width: int = 48) -> str:
    start = max(0, at - 16)
    if start:  # begin at a word when one starts shortly before the difference
        space = text.find(" ", start, at)
        start = space + 1 if space >= 0 else start
    piece = text[start : start + width].replace("\n", "\\n")
    return ("…" if start else "") + piece + ("…" if start + width < len(text) else "")


def _first_difference(recorded: str, live: str) -> str:
    a, b = normalized(recorded), normalized(live)
    at = next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )
    return f"recorded {_snippet(a, at)!r}, now {_snippet(b, at)!r}"


def describe(recorded: dict[str, Any], live: dict[str, Any]) -> str:
    """What differs between a recorded and a live request, in one line."""
    for key in (
        "model",
        "operation",
        "temperature",
        "maxOutputTokens",
        "toolChoice",
        "stop",
        "responseFormat",
    ):
        if recorded.get(key) != live.get(key):
            return f"{key} differs: recorded {recorded.get(key)!r}, now {live.get(key)!r}"
    reason = _tools_differ(recorded.get("tools") or [], live.get("tools") or [])
    if reason:
        return reason
    rec_msgs, live_msgs = recorded.get("messages") or [], live.get("messages") or []
    for index, (a, b) in enumerate(zip(rec_msgs, live_msgs, strict=False)):
        if a.get("role") != b.get("role"):
            return f"message {index} role differs: recorded {a.get('role')}, now {b.get('role')}"
        if not align(canonical(a), canonical(b), IdBinding()):
            return f"message {index} ({a.get('role')}) {_message_difference(a, b)}"
    if len(rec_msgs) != len(live_msgs):
        return f"message count differs: recorded {len(rec_msgs)}, now {len(live_msgs)}"
    return "the ids in the request do not correspond to the recorded ones"


def _message_difference(a: dict[str, Any], b: dict[str, Any]) -> str:
    if a.get("content") != b.get("content"):
        return f"text differs: {_first_difference(_text(a), _text(b))}"
    rec, now = a.get("toolCalls") or [], b.get("toolCalls") or []
    rec_names, now_names = [c.get("name") for c in rec], [c.get("name") for c in now]
    if rec_names != now_names:
        return f"tool calls differ: recorded {rec_names}, now {now_names}"
    for x, y in zip(rec, now, strict=True):
        if x.get("arguments") != y.get("arguments"):
            diff = _first_difference(str(x.get("arguments")), str(y.get("arguments")))
            return f"arguments of {x.get('name')} differ: {diff}"
    return f"differs: {_first_difference(canonical(a), canonical(b))}"


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return canonical(content)


def _tools_differ(recorded: list[dict[str, Any]], live: list[dict[str, Any]]) -> str | None:
    rec = {t.get("name"): t for t in recorded}
    now = {t.get("name"): t for t in live}
    # key=str: a tool without a name (None) must not break the comparison of the others
    added, removed = sorted(set(now) - set(rec), key=str), sorted(set(rec) - set(now), key=str)
    if added or removed:
        parts = []
        if added:
            parts.append(f"added {', '.join(map(str, added))}")
        if removed:
            parts.append(f"removed {', '.join(map(str, removed))}")
        return f"tools differ: {'; '.join(parts)}"
    for name in rec:
        if canonical(rec[name]) != canonical(now[name]):
            return f"tool {name!r} definition differs"
    if [t.get("name") for t in recorded] != [t.get("name") for t in live]:
        return "tools differ in order"
    return None
