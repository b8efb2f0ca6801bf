"""Calls into a connector from a route, and what their failures may tell the caller.

A connector is a plugin: besides its typed :class:`~nyla.sdk.connectors.ConnectorError`\\ s it
can fail with anything Python raises — ``ValueError`` for a cursor or path it cannot parse,
``OSError`` for a dangling symlink in a local folder — and its messages may name the server's
own folders. :func:`connector_call` turns every such failure into a typed error (the app's
handler answers it with a 4xx or a 502) whose message names no server path."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from nyla.sdk.connectors import ConnectorError, VendorBadRequestError
from nyla.sdk.text import HIDDEN, redact_paths, server_values

__all__ = ["HIDDEN", "connector_call", "redact_paths", "server_values"]

log = logging.getLogger(__name__)

#: errors an adapter raises when it cannot use a value it was given (a cursor, a path)
_BAD_VALUE = (ValueError, TypeError, LookupError, ArithmeticError)


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
    except Exception as exc:  # a plugin's parser choking on what its vendor sent, or its bug
        log.warning("%s failed on a call from the host", service, exc_info=True)
        raise ConnectorError(
            f"{service}: the service's answer could not be read ({type(exc).__name__})",
            service=service,
        ) from exc
