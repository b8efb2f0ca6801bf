"""Short-lived signed download links: a file opens in the browser without a bearer token in
its URL.

``/api/files/{id}/download?user=..&expires=..&signature=..``: the signature is an HMAC-SHA256
over the file id, the expiry (Unix seconds) and the identity the link was made for (user and
mandate), under a key derived from the host's secret (``NYLA_SECRET_KEY``; never that key
itself). The download reads the file as that identity, so a link never reaches more than its
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

    def _signature(self, file_id: str, expires: int, user_id: str, mandate_id: str | None) -> str:
        if self._key is None:
            self._key = self._key_source()
        message = "\n".join((file_id, str(expires), user_id, mandate_id or "")).encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def link(self, file_id: str, user_id: str, mandate_id: str | None) -> tuple[str, datetime]:
        """The URL of a download link for ``file_id`` and when it expires."""
        expires = int(self.clock()) + self.ttl_s
        query = {"user": user_id, "expires": str(expires)}
        if mandate_id:
            query["mandate"] = mandate_id
        query["signature"] = self._signature(file_id, expires, user_id, mandate_id)
        url = f"/api/files/{quote(file_id, safe='')}/download?{urlencode(query)}"
        return url, datetime.fromtimestamp(expires, UTC)

    def check(
        self, file_id: str, user_id: str, mandate_id: str | None, expires: int, signature: str
    ) -> str | None:
        """Why the link is refused (``None``: it is valid). The signature is compared in
        constant time."""
        expected = self._signature(file_id, expires, user_id, mandate_id)
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
    context's user may read in the file store (an upload), else ``None``."""
    opened: list[dict[str, Any]] = []
    for citation in citations:
        item = dict(citation)
        file_id = item.get("fileId")
        if not item.get("url") and isinstance(file_id, str):
            try:
                stored = await kernel.files.get(file_id, context)
            except Exception:  # a synced item's id is no file-store id: no link, no failure
                stored = None
            if stored is not None:
                item["url"], _ = links.link(file_id, context.user_id, context.mandate_id)
        opened.append(item)
    return opened
