"""What an error may tell a caller about the server: never where its files are.

Connectors and tools fail with messages that may name the server's own folders (a local
folder's root, a dangling symlink's target, an ``OSError``'s file name). Whoever shows such a
message — the web host to a browser, the agent to a model — passes it through
:func:`redact_paths`, which replaces absolute paths and ``file:`` URIs by :data:`HIDDEN` but
keeps what the caller sent itself (its own path is no secret to it) and paths inside URLs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

from nyla.connections.settings import server_only_keys

#: what stands where a server path was
HIDDEN = "<server path>"
#: an absolute path of two parts or more (``/srv/share``, ``C:\\data\\x``) or a file URI, not
#: inside a URL (``https://host/a/b`` keeps its path). Linear: segments cannot overlap.
_SERVER_PATH = re.compile(
    r"file://[^\s'\"<>]*"
    r"|(?<![\w.:/\\~-])/[^\s'\"<>/]+(?:/[^\s'\"<>/]+)+/?"
    r"|\b[A-Za-z]:\\[^\s'\"<>]+"
)


def redact_paths(text: str, hidden: Iterable[str] = (), keep: Iterable[str] = ()) -> str:
    """``text`` with each of ``hidden`` (a connection's server settings) and every other
    absolute path replaced by :data:`HIDDEN`, except paths in ``keep`` (what the caller
    sent: its own path is no secret to it)."""
    for value in sorted((h for h in hidden if len(h) > 2), key=len, reverse=True):
        text = text.replace(value, HIDDEN)
    kept = set(keep)

    def hide(match: re.Match[str]) -> str:
        found = match[0]
        path = found.rstrip(".,:;!?)]}")  # sentence punctuation after a path is not part of it
        return (path if path in kept else HIDDEN) + found[len(path) :]

    return _SERVER_PATH.sub(hide, text)


def sent_values(arguments: Any) -> list[str]:
    """The strings a caller sent (a tool's arguments, flattened): what :func:`redact_paths`
    keeps."""
    found: list[str] = []
    stack = [arguments]
    while stack and len(found) < 256:
        value = stack.pop()
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list | tuple):
            stack.extend(value)
        elif hasattr(value, "model_dump"):
            stack.append(value.model_dump())
    return found


def server_values(adapter: Any, settings: dict[str, Any]) -> list[str]:
    """The values of a connection's server settings (e.g. localfs' ``root``) in every form a
    message may show them: as set, with ``~`` expanded, resolved."""
    values: list[str] = []
    for key in server_only_keys(adapter):
        value = settings.get(key)
        if isinstance(value, str) and value:
            expanded = os.path.expanduser(value)
            values += [value, expanded, os.path.realpath(expanded)]
    return values
