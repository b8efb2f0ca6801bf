"""A tool call's arguments, parsed once between the AI service and the agent.

The AI service checks every tool call's arguments as it answers (a call whose arguments are no
JSON object is reported in ``AiCallResponse.invalid_tool_arguments``); the agent needs the same
object to dispatch the call. :func:`parse_object` keeps what it parsed under the exact text, and
:func:`take_parsed` hands it out once: a later call with the same text, or a text that differs by
one character (placeholders restored into it, an edited call), parses again. The object handed
out is no other caller's (taken out of the memo, never shared), so a hook that changes the dict
cannot change what another call sees.
"""

from __future__ import annotations

from typing import Any

from nyla.text import loads_json

#: arguments text -> the JSON object parsed from it, until the agent takes it
_PARSED: dict[str, dict[str, Any]] = {}
#: texts kept at most (calls nobody dispatches, e.g. a chat's, are dropped with the rest)
_PARSED_MAX = 256
#: longer texts are not kept (a rare large argument is parsed twice rather than held)
_KEPT_CHARS = 4096


def parse_object(text: str) -> dict[str, Any] | str:
    """The JSON object ``text`` holds (kept for :func:`take_parsed`), or why it holds none."""
    try:
        value = loads_json(text)
    except Exception as exc:  # RecursionError of deep nesting included: never fatal here
        return f"invalid JSON: {type(exc).__name__}"
    if not isinstance(value, dict):
        return "arguments are not a JSON object"
    if len(text) <= _KEPT_CHARS:
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[text] = value
    return value


def take_parsed(text: str) -> dict[str, Any] | None:
    """The object :func:`parse_object` parsed from exactly ``text`` and nobody took yet."""
    return _PARSED.pop(text, None)
