"""Calls into a connector from a route, and what their failures may tell the caller.

A connector is a plugin: besides its typed :class:`~nyla.sdk.connectors.ConnectorError`\\ s it
can fail with anything Python raises — ``ValueError`` for a cursor or path it cannot parse,
``OSError`` for a dangling symlink in a local folder — and its messages may name the server's
own folders. :func:`connector_call` turns every such failure into a typed error (the app's
handler answers it with a 4xx or a 502) whose message names no server path."""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

from nyla.sdk.connectors import ConnectorError, VendorBadRequestError

#: what stands where a server path was
HIDDEN = "<server path>"
#: an absolute path of two parts or more (``/srv/share``, ``C:\\data\\x``) or a file URI, not
#: inside a URL (``https://host/a/b`` keeps its path)
_SERVER_PATH = re.compile(
    r"file://[^\s'\"<>]*"
    r"|(?<![\w.:/\\~-])/[^\s'\"<>/]+(?:/[^\s'\"<>/]+)+/?"
    r"|\b[A-Za-z]:\\[^\s'\"<>]+"
)
#: errors an adapter raises when it cannot use a value it was given (a cursor, a path)
_BAD_VALUE = (ValueError, TypeError, LookupError, ArithmeticError)


def redact_paths(text: str, hidden: Iterable[str] = (), keep: Iterable[str] = ()) -> str:
    """``text`` with each of ``hidden`` (a connection's server settings) and every other
    absolute path replaced by :data:`HIDDEN`, except paths in ``keep`` (what the caller
    sent: its own path is no secret to it)."""
    for value in sorted((h for h in hidden if len(h) > 2), key=len, reverse=True):
        text = text.replace(value, HIDDEN)
    kept = set(keep)
    return _SERVER_PATH.sub(lambda m: m[0] if m[0] in kept else HIDDEN, text)


def server_values(adapter: Any, settings: dict[str, Any]) -> list[str]:
    """The values of a connection's server settings (e.g. localfs' ``root``) in every form a
    message may show them: as set, with ``~`` expanded, resolved."""
    values: list[str] = []
    for key in getattr(adapter, "server_settings", ()) or ():
        value = settings.get(key)
        if isinstance(value, str) and value:
            expanded = os.path.expanduser(value)
            values += [value, expanded, os.path.realpath(expanded)]
    return values


@asynccontextmanager
async def connector_call(
    service: str, adapter: Any, settings: dict[str, Any], given: dict[str, str | None]
) -> AsyncIterator[None]:
    """Run a call into ``adapter`` of ``service``: its typed errors pass with their messages
    redacted, a value it cannot use (``given``: what the caller sent, by name) becomes a
    :class:`VendorBadRequestError` (400), a file-system failure a :class:`ConnectorError`
    (502) that says what failed but not where."""
    hidden = server_values(adapter, settings)
    keep = [v for v in given.values() if v]
    try:
        yield
    except ConnectorError as exc:
        exc.args = (redact_paths(str(exc), hidden, keep),)
        raise
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConnectorError(
            f"{service}: an entry could not be read ({reason})", service=service
        ) from exc
    except _BAD_VALUE as exc:
        sent = [name for name, value in given.items() if value]
        what = f"the {' or '.join(sent)} given" if sent else "the request"
        hint = "; a cursor is only valid as a listing gave it out" if given.get("cursor") else ""
        message = redact_paths(str(exc), hidden, keep)[:200]
        raise VendorBadRequestError(
            f"{service} cannot use {what} ({message}){hint}", service=service
        ) from exc
