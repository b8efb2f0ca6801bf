"""Short-lived signed download links: a file opens in the browser without a bearer token in
its URL.

``/api/files/{id}/download?user=..&expires=..&signature=..`` (a file of the file store) and
``/api/connections/{id}/items/download?item=..&user=..`` (an item of one of the maker's own
connections, e.g. a cited file of a local folder): the signature is an HMAC-SHA256 over what
is linked (its kind and id), the expiry (Unix seconds) and the identity the link was made for
(user and mandate), under a key derived from the host's secret (``NYLA_SECRET_KEY``; never
that key itself). The download reads as that identity, so a link never reaches more than its
maker could; it stops working after :data:`LINK_TTL_S` seconds."""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, urlencode

#: how long a link works (seconds)
LINK_TTL_S = 300
PURPOSE = "nyla-host:file-download-links"


def file_target(file_id: str) -> str:
    """What a link to a file of the file store signs (its kind first: no file id can pass for
    a connection item)."""
    return f"file\n{file_id}"


def item_target(connection_id: str, item_id: str) -> str:
    """What a link to an item of a connection signs."""
    return f"item\n{connection_id}\n{item_id}"


class LinkSigner:
    """Makes and checks signed download links; ``key`` is called once, on first use."""

    def __init__(
        self,
        key: Callable[[], bytes],
        *,
        ttl_s: int = LINK_TTL_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._key_source = key
        self._key: bytes | None = None
        self.ttl_s = ttl_s
        self.clock = clock

    def _signature(self, target: str, expires: int, user_id: str, mandate_id: str | None) -> str:
        if self._key is None:
            self._key = self._key_source()
        message = "\n".join((target, str(expires), user_id, mandate_id or "")).encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def _signed(
        self, target: str, user_id: str, mandate_id: str | None, extra: dict[str, str]
    ) -> tuple[str, datetime]:
        expires = int(self.clock()) + self.ttl_s
        query = {**extra, "user": user_id, "expires": str(expires)}
        if mandate_id:
            query["mandate"] = mandate_id
        query["signature"] = self._signature(target, expires, user_id, mandate_id)
        return urlencode(query), datetime.fromtimestamp(expires, UTC)

    def link(self, file_id: str, user_id: str, mandate_id: str | None) -> tuple[str, datetime]:
        """The URL of a download link for ``file_id`` and when it expires."""
        query, expires = self._signed(file_target(file_id), user_id, mandate_id, {})
        return f"/api/files/{quote(file_id, safe='')}/download?{query}", expires

    def item_link(
        self, connection_id: str, item_id: str, user_id: str, mandate_id: str | None
    ) -> tuple[str, datetime]:
        """The URL of a download link for an item of one of the user's connections."""
        target = item_target(connection_id, item_id)
        query, expires = self._signed(target, user_id, mandate_id, {"item": item_id})
        return f"/api/connections/{quote(connection_id, safe='')}/items/download?{query}", expires

    def check(
        self, target: str, user_id: str, mandate_id: str | None, expires: int, signature: str
    ) -> str | None:
        """Why the link to ``target`` (:func:`file_target`, :func:`item_target`) is refused
        (``None``: it is valid). The signature is compared in constant time."""
        expected = self._signature(target, expires, user_id, mandate_id)
        if not hmac.compare_digest(expected.encode(), signature.encode("utf-8", "replace")):
            return "the link's signature is not valid"
        if expires < self.clock():
            return "the link has expired; make a new one"
        if expires > self.clock() + self.ttl_s + 60:
            return "the link's expiry is further away than a link may last"
        return None


async def with_urls(
    kernel: Any, links: LinkSigner, citations: list[dict[str, Any]], context: Any
) -> list[dict[str, Any]]:
    """``citations`` with a ``url`` that opens each source: the one a citation has (a
    vendor's web address), else a fresh signed link when the cited file is one the
    context's user may read in the file store (an upload) or an item of one of the user's
    own connections (a file of a local folder), else ``None``. An item of someone else's
    connection (a file shared with the mandate) gets no link: its original may hold what the
    index neutralized."""
    opened: list[dict[str, Any]] = []
    for citation in citations:
        item = dict(citation)
        file_id, connection_id = item.get("fileId"), item.get("connectionId")
        if item.get("url") or not isinstance(file_id, str):
            opened.append(item)
            continue
        if isinstance(connection_id, str) and file_id.startswith(connection_id + ":"):
            if await _owns(kernel, connection_id, context.user_id):
                item_id = file_id[len(connection_id) + 1 :]
                item["url"], _ = links.item_link(
                    connection_id, item_id, context.user_id, context.mandate_id
                )
        else:
            try:
                stored = await kernel.files.get(file_id, context)
            except Exception:  # not a file-store id: no link, no failure
                stored = None
            if stored is not None:
                item["url"], _ = links.link(file_id, context.user_id, context.mandate_id)
        opened.append(item)
    return opened


async def _owns(kernel: Any, connection_id: str, user_id: str) -> bool:
    try:
        await kernel.connections.get(connection_id, user_id=user_id)
    except Exception:  # gone, or not this user's: no link
        return False
    return True
