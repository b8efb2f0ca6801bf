"""A fake vendor at the wire for connector and walker contract suites.

The suite owns the *data* (:class:`FakeCorpus`: documents, a change log, cursors that can
expire, listings that can repeat or lose items) and the *faults* (:class:`FakeVendor`: 429
with ``Retry-After``, timeouts, revoked tokens, a token endpoint). The plugin supplies only a
:class:`ConnectorWire`: how its vendor's API shapes a listing, a search, a download or a delta
page of that data, as the vendor's public docs show. So every connector runs the same
scenarios over its own wire format.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any
from urllib.parse import parse_qs

import httpx

from nyla.models.datasource import TokenGrant
from nyla.testing.vendor_spec import VendorSpec


class StaleCursorError(Exception):
    """A cursor from before :meth:`FakeCorpus.expire_cursors` was presented; the wire answers
    with its vendor's "cursor expired" response (:meth:`ConnectorWire.expired_reply`)."""


@dataclass
class FakeDoc:
    """One document of the fake vendor."""

    id: str
    name: str
    folder: str
    content: bytes
    mime: str = "text/plain"
    modified: datetime = field(default_factory=lambda: datetime(2026, 1, 5, 9, 30, tzinfo=UTC))
    author: str = "Ada Muster"
    version: int = 1
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def path(self) -> str:
        """Full path of the document (``/folder/name``)."""
        return f"{self.folder.rstrip('/')}/{self.name}"

    @property
    def etag(self) -> str:
        """A change marker that differs for every version of the content."""
        return hashlib.sha1(self.content + str(self.version).encode()).hexdigest()[:16]


class FakeCorpus:
    """Documents with a change log and opaque cursors ``"<generation>.<mode>.<offset>.<since>
    .<upto>"`` (the wire passes them through untouched)."""

    def __init__(self, page_size: int = 3) -> None:
        self.page_size = page_size
        self.docs: dict[str, FakeDoc] = {}
        self.log: list[tuple[int, str]] = []  # (seq, doc id) of every add/change/remove
        self.deleted: set[str] = set()
        self.seq = 0
        self.generation = 1
        #: each page after the first repeats the previous page's last item (delta APIs do)
        self.duplicate_boundary = False
        #: listings end after this many items while claiming to be complete
        self.truncate_after: int | None = None

    # ---- changing the data ---------------------------------------------------------------

    def add(self, name: str, content: str | bytes, folder: str = "/", **kw: Any) -> FakeDoc:
        """Add a document; returns it."""
        self.seq += 1
        doc_id = f"doc{self.seq:05d}"
        data = content.encode() if isinstance(content, str) else content
        doc = FakeDoc(id=doc_id, name=name, folder=folder, content=data, **kw)
        self.docs[doc_id] = doc
        self.log.append((self.seq, doc_id))
        return doc

    def change(self, doc_id: str, content: str | bytes) -> FakeDoc:
        """Replace a document's content (a new version)."""
        self.seq += 1
        doc = self.docs[doc_id]
        doc.content = content.encode() if isinstance(content, str) else content
        doc.version += 1
        doc.modified = doc.modified + timedelta(minutes=self.seq)
        self.log.append((self.seq, doc_id))
        return doc

    def rename(self, doc_id: str, name: str) -> FakeDoc:
        """Give a document a new name (a new version: vendors report a rename as a change)."""
        self.seq += 1
        doc = self.docs[doc_id]
        doc.name = name
        doc.version += 1
        doc.modified = doc.modified + timedelta(minutes=self.seq)
        self.log.append((self.seq, doc_id))
        return doc

    def remove(self, doc_id: str) -> None:
        """Delete a document (delta listings report it as deleted)."""
        self.seq += 1
        self.docs.pop(doc_id)
        self.deleted.add(doc_id)
        self.log.append((self.seq, doc_id))

    def expire_cursors(self) -> None:
        """Every cursor handed out so far becomes invalid (410 / vendor's equivalent)."""
        self.generation += 1

    # ---- reading ------------------------------------------------------------------------

    def live(self, folder: str | None = None) -> list[FakeDoc]:
        """Current documents (below ``folder`` when given), ordered by id."""
        prefix = (folder or "/").rstrip("/") + "/"
        return [d for _, d in sorted(self.docs.items()) if d.path.startswith(prefix)]

    def listed(self, folder: str | None = None) -> list[FakeDoc]:
        """What a listing shows: :meth:`live`, cut at ``truncate_after`` (for wires of vendors
        without cursors, e.g. WebDAV's PROPFIND)."""
        docs = self.live(folder)
        return docs if self.truncate_after is None else docs[: self.truncate_after]

    def get(self, doc_id: str) -> FakeDoc | None:
        """A document by id."""
        return self.docs.get(doc_id)

    def _decode(self, cursor: str | None, mode: str) -> tuple[int, int, int]:
        if not cursor:
            return 0, 0, self.seq
        try:
            gen, got_mode, offset, since, upto = cursor.split(".")
            values = int(gen), int(offset), int(since), int(upto)
        except ValueError as exc:
            raise StaleCursorError(f"malformed cursor {cursor!r}") from exc
        if values[0] != self.generation or got_mode != mode:
            raise StaleCursorError(f"cursor {cursor!r} expired")
        return values[1], values[2], values[3]

    def _cursor(self, mode: str, offset: int, since: int, upto: int) -> str:
        return f"{self.generation}.{mode}.{offset}.{since}.{upto}"

    def _slice(self, docs: list[Any], offset: int) -> tuple[list[Any], int | None]:
        limit = len(docs) if self.truncate_after is None else min(len(docs), self.truncate_after)
        start = offset - 1 if self.duplicate_boundary and offset > 0 else offset
        end = min(offset + self.page_size, limit)
        return docs[start:end], (end if end < limit else None)

    def listing(
        self, cursor: str | None, folder: str | None = None
    ) -> tuple[list[FakeDoc], str | None]:
        """One page of every document (below ``folder``) and the cursor of the next."""
        offset, _, upto = self._decode(cursor, "l")
        page, nxt = self._slice(self.live(folder), offset)
        return page, (self._cursor("l", nxt, 0, upto) if nxt is not None else None)

    def listing_began(self, cursor: str | None, mode: str = "l") -> int:
        """The corpus sequence when the listing that handed out ``cursor`` began (now, for
        a listing's first page): what a sync token given at its end stands for."""
        return self._decode(cursor, mode)[2]

    def search(self, query: str, cursor: str | None) -> tuple[list[FakeDoc], str | None]:
        """One page of the documents whose name or text contains every word of ``query``."""
        offset, _, upto = self._decode(cursor, "s")
        words = [w.lower() for w in query.split()]
        hits = [
            d
            for d in self.live()
            if all(w in (d.name + " " + d.content.decode("utf-8", "ignore")).lower() for w in words)
        ]
        page, nxt = self._slice(hits, offset)
        return page, (self._cursor("s", nxt, 0, upto) if nxt is not None else None)

    def delta(
        self, cursor: str | None, folder: str | None = None
    ) -> tuple[list[FakeDoc], list[str], str | None, str | None]:
        """One page of a delta: ``(changed docs, deleted ids, next cursor, delta cursor)``.
        From ``None`` it lists everything; the last page carries the delta cursor that later
        returns the changes made after it was handed out."""
        if cursor and cursor.split(".")[1:2] == ["D"]:
            _, since, _ = self._decode(cursor, "D")
            offset, upto = 0, self.seq
        else:
            offset, since, upto = self._decode(cursor, "d") if cursor else (0, 0, self.seq)
        if since == 0:
            changed = [d.id for d in self.live(folder)]
        else:
            changed = sorted({doc_id for seq, doc_id in self.log if since < seq <= upto})
        page_ids, nxt = self._slice(changed, offset)
        docs = [self.docs[i] for i in page_ids if i in self.docs]
        deleted = [i for i in page_ids if i not in self.docs and i in self.deleted]
        if nxt is not None:
            return docs, deleted, self._cursor("d", nxt, since, upto), None
        return docs, deleted, None, self._cursor("D", 0, max(upto, 1), 0)


class ConnectorWire:
    """What a connector plugin supplies to its contract suite: its vendor's wire format.

    Override :meth:`adapter` and :meth:`handle`; the rest has defaults that fit a standard
    OAuth 2.0 vendor answering errors as JSON.
    """

    #: scope passed to search / sync / list_ids (a folder path, label, project ...)
    scope: str = ""
    #: whether a finished sync's checkpoint can expire at the vendor (a delta token can; a
    #: time cursor such as Jira's ``updated`` or ClickUp's ``date_updated_gt`` cannot)
    cursors_expire: bool = True
    #: whether the connector lists folder by folder, so that one folder it cannot read
    #: leaves the rest listed (reported as ``SyncPage.unlisted``); a single-stream listing
    #: (a delta feed, one search) fails as a whole instead
    lists_by_folder: bool = False
    #: the vendor's API description (:mod:`nyla.testing.vendor_spec`): when set, every data
    #: request and every answer (faults included) is checked against it
    spec: VendorSpec | None = None

    def add_unlistable(self, corpus: FakeCorpus, name: str, content: str) -> FakeDoc:
        """Add a document in a place the walker contract can then make unlistable
        (:meth:`FakeVendor.deny_listing`): by default the scope's own folder; a wire that
        lists folder by folder puts it in a subfolder of its own."""
        return corpus.add(name, content, self.scope or "/")

    def adapter(self) -> Any:
        """A fresh adapter under test."""
        raise NotImplementedError

    def settings(self) -> dict[str, Any]:
        """Settings of the connection the suite creates (e.g. ``{"baseUrl": ...}``)."""
        return {}

    def grant(self) -> TokenGrant | None:
        """The tokens of the test connection (``None`` for services without OAuth)."""
        return TokenGrant(
            access_token="access-1",
            refresh_token="refresh-1",
            expires_at=datetime.now(UTC) + timedelta(hours=1),
        )

    def handle(self, request: httpx.Request, corpus: FakeCorpus) -> httpx.Response:
        """Answer a data request (listing, search, download, delta, upload) from ``corpus`` in
        the vendor's documented format: listings through ``corpus.listing`` / ``search`` /
        ``delta`` (paged, cursors), or ``corpus.listed()`` for vendors without paging. Raise :class:`StaleCursorError` (or let the corpus
        raise it) for an expired cursor."""
        raise NotImplementedError

    def expired_reply(self, request: httpx.Request) -> httpx.Response:
        """The vendor's answer to an expired cursor (Graph: 410 Gone)."""
        return httpx.Response(410, json={"error": {"code": "resyncRequired"}})

    def error_reply(self, status: int, headers: dict[str, str] | None = None) -> httpx.Response:
        """The vendor's error answer with ``status`` (and headers such as Retry-After)."""
        return httpx.Response(status, headers=headers, json={"error": {"code": str(status)}})

    def throttle_reply(self, seconds: int) -> httpx.Response:
        """The vendor's own way of saying "too many requests, wait ``seconds``", as its docs
        show it (default: 429 with ``Retry-After``). A vendor that says it otherwise — only a
        reset header, or a 403 with a reason — overrides this, so the connector's declared
        throttling policy is tested against that dialect."""
        return self.error_reply(429, {"Retry-After": str(seconds)})

    def token_reply(self, access: str, refresh: str, expires_in: int) -> httpx.Response:
        """The token endpoint's answer (RFC 6749 §5.1)."""
        return httpx.Response(
            200,
            json={
                "access_token": access,
                "refresh_token": refresh,
                "expires_in": expires_in,
                "token_type": "Bearer",
            },
        )

    def invalid_grant_reply(self) -> httpx.Response:
        """The token endpoint's answer to a revoked refresh token (RFC 6749 §5.2)."""
        return httpx.Response(
            400, json={"error": "invalid_grant", "error_description": "consent revoked"}
        )

    def item_id(self, doc: FakeDoc) -> str:
        """The id the adapter gives ``doc`` (default: the vendor's own id; path-addressed
        stores such as WebDAV use the path)."""
        return doc.id

    def download_id(self, doc: FakeDoc) -> str:
        """The id whose ``download`` returns ``doc``'s bytes (default: :meth:`item_id`; a task
        service whose files are attachments of a task names the attachment)."""
        return self.item_id(doc)

    def search_term(self, doc: FakeDoc) -> str:
        """A term the vendor's search finds ``doc`` by (default: its name without suffix)."""
        return doc.name.rsplit(".", 1)[0]


class FakeVendor:
    """The transport handler the suites install: token endpoint, auth, faults, then the
    wire. ``faults`` maps the 1-based number of a data request to what happens to it
    (``"429"``, ``"429-date"``, ``"throttle"`` (the vendor's own dialect), ``"timeout"``,
    ``"500"``); ``"*"`` applies to every one."""

    def __init__(
        self,
        wire: ConnectorWire,
        corpus: FakeCorpus,
        token_url: str | None,
        auth_scheme: str = "Bearer",
    ) -> None:
        self.wire = wire
        self.auth_scheme = auth_scheme
        self.corpus = corpus
        self.token_url = token_url
        grant = wire.grant()
        self.access = grant.access_token if grant else None
        self.refresh = grant.refresh_token if grant else None
        self.faults: dict[int | str, str] = {}
        self.retry_after_s = 7
        #: seconds the client has waited so far (the suite's recorded sleeps): with it, a
        #: ``"throttle"`` fault lasts until the client waited ``retry_after_s``, as a vendor's
        #: window does; without it, one answer
        self.waited: Callable[[], float] | None = None
        self._throttled_at: float | None = None
        self.data_requests: list[httpx.Request] = []
        self.token_requests: list[httpx.Request] = []
        self.refresh_revoked = False
        self._issued = 1
        self._denied: list[bytes] = []
        #: how many answers :meth:`deny_listing` turned into 403
        self.denials = 0

    def deny_listing(self, docs: list[FakeDoc]) -> None:
        """From now on, every answer that would show one of ``docs`` by name is a 403: the
        folder holding them (for a vendor listed folder by folder), or the page or feed
        showing them, cannot be read — as with a folder whose permissions changed."""
        self._denied = [doc.name.encode() for doc in docs]

    def allow_listing(self) -> None:
        """Undo :meth:`deny_listing`."""
        self._denied = []

    def revoke_access(self) -> None:
        """The current access token stops working (the vendor answers 401)."""
        self.access = f"never-issued-{self._issued}"

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if self.token_url and str(request.url).split("?")[0] == self.token_url.split("?")[0]:
            return self._token(request)
        if self.wire.spec is not None:
            return self.wire.spec.guard(self._data)(request)  # type: ignore[no-any-return]
        return self._data(request)

    def _data(self, request: httpx.Request) -> httpx.Response:
        self.data_requests.append(request)
        number = len(self.data_requests)
        fault = self.faults.get(number) or self.faults.get("*")
        if fault == "throttle" and self.waited is not None:
            self._throttled_at = self.waited()
        if fault:
            return self._fault(fault, request)
        if self._throttled_at is not None and self.waited is not None:
            left = self.retry_after_s - (self.waited() - self._throttled_at)
            if left > 0:  # the vendor's window has not reset yet: it throttles again
                return self.wire.throttle_reply(max(1, round(left)))
            self._throttled_at = None
        if self.access is not None:
            from nyla.connections.http import _authorization

            auth = request.headers.get("authorization", "")
            if auth != _authorization(self.auth_scheme, self.access):
                return self.wire.error_reply(401)
        try:
            response = self.wire.handle(request, self.corpus)
        except StaleCursorError:
            return self.wire.expired_reply(request)
        if self._denied and response.status_code < 300:
            try:
                body = response.read()
            except RuntimeError:  # an async stream (a download): not a listing
                return response
            if any(name in body for name in self._denied):
                self.denials += 1
                return self.wire.error_reply(403)
        return response

    def _fault(self, fault: str, request: httpx.Request) -> httpx.Response:
        if fault == "timeout":
            raise httpx.ReadTimeout("fake vendor: no answer", request=request)
        if fault == "429":
            return self.wire.error_reply(429, {"Retry-After": str(self.retry_after_s)})
        if fault == "throttle":
            return self.wire.throttle_reply(self.retry_after_s)
        if fault == "429-date":
            when = datetime.now(UTC) + timedelta(seconds=30)
            return self.wire.error_reply(429, {"Retry-After": format_datetime(when, usegmt=True)})
        return self.wire.error_reply(int(fault))

    def _token(self, request: httpx.Request) -> httpx.Response:
        self.token_requests.append(request)
        form = {k: v[0] for k, v in parse_qs(request.content.decode()).items()}
        if self.refresh_revoked or form.get("refresh_token") != self.refresh:
            return self.wire.invalid_grant_reply()
        self._issued += 1
        self.access = f"access-{self._issued}"
        self.refresh = f"refresh-{self._issued}"
        return self.wire.token_reply(self.access, self.refresh, 3600)
