"""Contract suite for connector plugins: the adapter over its vendor's wire format, faked at
the transport, through the kernel's real connection store, token manager and HTTP layer.

A connector's tests subclass :class:`ConnectorContract` and override two fixtures: ``plugin``
(the plugin module) and ``wire`` (a :class:`~nyla.testing.fake_vendor.ConnectorWire` that
shapes the vendor's answers). The suite then runs the scenarios every connector must pass:
paging to the end, 429 with ``Retry-After`` (seconds and HTTP date), a timeout, persistent
timeouts, 401 → refresh → retry, ``invalid_grant`` → re-consent, an expired cursor → full
re-sync, duplicates across pages, incremental changes with deletions, a slim listing that
fails midway. Which scenarios run follows from what the adapter implements
(:func:`nyla.sdk.connectors.capabilities`), never from a flag.
"""

from __future__ import annotations

import inspect
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio

from nyla.connections.base import capabilities, sync_pages
from nyla.connections.errors import (
    ConnectorError,
    CursorExpiredError,
    ItemTooLargeError,
    NeedsReconsentError,
    VendorTimeoutError,
)
from nyla.connections.service import ConnectionService, ConnectorSession
from nyla.hookspecs import hookimpl
from nyla.testing.contract_base import PluginContract, _host_for
from nyla.testing.fake_vendor import ConnectorWire, FakeCorpus, FakeVendor

USER = "contract-user"


class Sleeps:
    """Records the delays the HTTP layer asks for instead of sleeping."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def require(adapter: Any, capability: str) -> None:
    """Skip the test when the adapter does not implement ``capability``."""
    if capability not in capabilities(adapter):
        pytest.skip(f"{adapter.service} does not implement {capability}")


async def collect_pages(session: ConnectorSession, method: str, *args: Any) -> list[Any]:
    """Every item of a paged call (``search``/``browse``), following cursors to the end."""
    items: list[Any] = []
    cursor = None
    for _ in range(1000):
        page = await getattr(session.adapter, method)(session, *args, cursor=cursor)
        items.extend(page.items)
        cursor = page.cursor
        if not cursor:
            return items
    raise AssertionError(f"{method} never ended (1000 pages)")


async def run_sync(
    session: ConnectorSession, scope: str, checkpoint: dict[str, Any] | None
) -> tuple[list[Any], dict[str, Any] | None]:
    """All pages of one sync run (with the full re-sync on an expired cursor)."""
    pages = []
    async for page in sync_pages(session.adapter, session, scope, checkpoint):
        pages.append(page)
        if len(pages) > 1000:
            raise AssertionError("sync never ended (1000 pages)")
    return pages, (pages[-1].checkpoint if pages else checkpoint)


class ConnectorContract(PluginContract):
    """The scenarios every connector adapter passes over a fake of its vendor."""

    #: documents the suite creates in the fake vendor (more than two pages of three)
    corpus_size: int = 7

    @pytest.fixture
    def wire(self) -> ConnectorWire:
        """The vendor's wire format. Override."""
        raise NotImplementedError("override the `wire` fixture with your ConnectorWire")

    @pytest.fixture
    def corpus(self, wire: ConnectorWire) -> FakeCorpus:
        """Documents in the fake vendor: reports in the connection's scope."""
        corpus = FakeCorpus(page_size=3)
        folder = wire.scope or "/"
        for i in range(self.corpus_size):
            corpus.add(f"report-{i:02d}.txt", f"Quarterly report {i}: revenue grew.", folder)
        return corpus

    @pytest.fixture
    def adapter(self, wire: ConnectorWire) -> Any:
        """The adapter under test."""
        return wire.adapter()

    @pytest.fixture
    def vendor(self, wire: ConnectorWire, corpus: FakeCorpus, adapter: Any) -> FakeVendor:
        """The fake vendor (faults, tokens) in front of the wire."""
        oauth = getattr(adapter, "oauth", None)
        return FakeVendor(wire, corpus, oauth.token_url if oauth else None, _scheme(wire.adapter()))

    @pytest.fixture
    def sleeps(self) -> Sleeps:
        """Delays the HTTP layer waited (recorded, never slept)."""
        return Sleeps()

    @pytest_asyncio.fixture
    async def service(
        self, db: Any, adapter: Any, vendor: FakeVendor, sleeps: Sleeps, monkeypatch: Any
    ) -> ConnectionService:
        """The kernel's connection service over the fake vendor's transport."""
        from cryptography.fernet import Fernet

        from nyla.kernel import Kernel
        from nyla.knowledge.consent import purge_connection
        from nyla.plugins import PluginHost

        oauth = getattr(adapter, "oauth", None)
        if oauth is not None:
            for setting in (oauth.client_id_setting, oauth.client_secret_setting):
                if setting:
                    monkeypatch.setenv(setting, f"contract-{setting.lower()}")
        host = PluginHost.from_plugins([_Adapters(adapter)], names=["adapter-under-test"])
        kernel = Kernel(plugins=host, db=db, settings={"secret_key": Fernet.generate_key()})
        return ConnectionService(
            kernel.db,
            kernel.plugins,
            purge_index=purge_connection,
            settings=kernel.settings,
            transport=httpx.MockTransport(vendor),
            sleep=sleeps,
        )

    @pytest_asyncio.fixture
    async def session(
        self, service: ConnectionService, wire: ConnectorWire, adapter: Any
    ) -> AsyncIterator[ConnectorSession]:
        """An open session on a fresh connection of the contract user."""
        connection = await service.add(
            adapter.service,
            user_id=USER,
            account="contract@example.com",
            grant=wire.grant(),
            settings=wire.settings(),
            connection_id=f"conn-{uuid.uuid4().hex[:8]}",
        )
        async with service.open(connection.id, user_id=USER) as opened:
            yield opened

    # ---- shape ------------------------------------------------------------------------

    def test_adapters_have_service_and_methods(self, plugin: Any) -> None:
        host = _host_for(plugin)
        assert host.connectors, "the plugin registers no connector (nyla_connectors)"
        for service, adapter in host.connectors.items():
            caps = capabilities(adapter)
            assert service, "a connector has an empty service id"
            assert caps, f"{service} implements no capability"
            for name in caps - {"refresh"}:
                method = getattr(adapter, name)
                assert inspect.iscoroutinefunction(method) or inspect.isasyncgenfunction(method), (
                    f"{service}.{name} must be async"
                )
            if "search" in caps:
                assert getattr(adapter, "query_syntax", ""), f"{service} documents no query syntax"

    # ---- paging -------------------------------------------------------------------------

    async def test_search_pages_to_the_end(
        self, session: ConnectorSession, corpus: FakeCorpus, wire: ConnectorWire
    ) -> None:
        require(session.adapter, "search")
        items = await collect_pages(session, "search", "report", wire.scope)
        assert {i.id for i in items} == {wire.item_id(d) for d in corpus.live()}, (
            "search lost or added items"
        )
        one = corpus.live()[4]
        found = await collect_pages(session, "search", wire.search_term(one), wire.scope)
        assert wire.item_id(one) in {i.id for i in found}, (
            f"search for {wire.search_term(one)!r} missed it"
        )
        assert all(i.title and i.kind for i in items), "items lack their metadata block"

    async def test_browse_pages_to_the_end(
        self, session: ConnectorSession, corpus: FakeCorpus, wire: ConnectorWire
    ) -> None:
        require(session.adapter, "browse")
        items = await collect_pages(session, "browse", wire.scope)
        service = session.adapter.service
        assert {i.id for i in items} == {wire.item_id(d) for d in corpus.live()}, (
            f"{service}: browse lost or added items"
        )
        by_id = {i.id: i for i in items}
        doc = corpus.live()[0]
        assert by_id[wire.item_id(doc)].title == doc.name, f"{service}: wrong title"
        assert by_id[wire.item_id(doc)].size in (None, len(doc.content)), (
            f"{service}: wrong size for {doc.name}"
        )

    async def test_download_returns_exact_bytes(
        self, session: ConnectorSession, corpus: FakeCorpus, wire: ConnectorWire
    ) -> None:
        require(session.adapter, "download")
        doc = corpus.live()[1]
        doc.content = b"\x00\xffbinary\r\n" + "Grüezi".encode()
        got = await session.adapter.download(session, wire.download_id(doc))
        service = session.adapter.service
        assert got.content == doc.content, f"{service}: downloaded bytes differ"
        assert got.item.id == wire.download_id(doc), f"{service}: the download names another item"

    async def test_download_is_capped(
        self, session: ConnectorSession, corpus: FakeCorpus, wire: ConnectorWire
    ) -> None:
        require(session.adapter, "download")
        doc = corpus.live()[2]
        doc.content = b"x" * 5000
        with pytest.raises(ItemTooLargeError):
            await session.adapter.download(session, wire.download_id(doc), max_bytes=1000)

    async def test_sync_pages_to_the_end(
        self, session: ConnectorSession, corpus: FakeCorpus, wire: ConnectorWire
    ) -> None:
        require(session.adapter, "sync")
        pages, _ = await run_sync(session, wire.scope, None)
        assert len(pages) >= 2, "seven documents at three per page must take several pages"
        assert pages[-1].done and not any(p.done for p in pages[:-1]), (
            "only the last sync page may be done"
        )
        assert all(p.checkpoint for p in pages), "every page must carry a checkpoint"
        assert all(p.full_listing for p in pages), "a sync from nothing is a full listing"
        ids = [i.id for p in pages for i in p.items]
        assert set(ids) == {wire.item_id(d) for d in corpus.live()}, (
            f"{session.adapter.service}: sync lost or added items"
        )

    async def test_sync_resumes_with_changes_and_deletions(
        self, session: ConnectorSession, corpus: FakeCorpus, wire: ConnectorWire
    ) -> None:
        require(session.adapter, "sync")
        _, checkpoint = await run_sync(session, wire.scope, None)
        changed, gone = corpus.live()[0], corpus.live()[1]
        corpus.change(changed.id, "Quarterly report, revised: revenue fell.")
        corpus.remove(gone.id)
        added = corpus.add("report-new.txt", "A new report.", wire.scope or "/")
        pages, _ = await run_sync(session, wire.scope, checkpoint)
        seen = {i.id: i for p in pages for i in p.items}
        assert wire.item_id(changed) in seen and wire.item_id(added) in seen, (
            "changes since the checkpoint missing"
        )
        tombstones = {t for p in pages for t in p.tombstones}
        full = all(p.full_listing for p in pages)
        if wire.item_id(gone) not in tombstones and not full:
            # a vendor without a deletion feed: the runner reconciles with the slim listing
            require(session.adapter, "list_ids")
            listed = {
                i async for page in session.adapter.list_ids(session, wire.scope) for i in page
            }
            assert wire.item_id(gone) not in listed and wire.item_id(changed) in listed, (
                "deletion neither reported nor visible in list_ids"
            )
        else:
            assert wire.item_id(gone) in tombstones or wire.item_id(gone) not in seen, (
                "deletion not reported"
            )
        if not full:
            assert len(seen) <= 3, "an incremental sync re-listed unchanged items"

    # ---- vendor behaviour ---------------------------------------------------------------

    async def _walk(self, session: ConnectorSession, wire: ConnectorWire) -> set[str]:
        caps = capabilities(session.adapter)
        if "sync" in caps:
            pages, _ = await run_sync(session, wire.scope, None)
            return {i.id for p in pages for i in p.items}
        method = "browse" if "browse" in caps else "search"
        args = (wire.scope,) if method == "browse" else ("report", wire.scope)
        return {i.id for i in await collect_pages(session, method, *args)}

    async def test_429_retry_after_seconds_is_waited_out(
        self, session: ConnectorSession, vendor: FakeVendor, sleeps: Sleeps, wire: ConnectorWire
    ) -> None:
        vendor.faults[1] = "429"
        assert await self._walk(session, wire) == {
            vendor.wire.item_id(d) for d in vendor.corpus.live()
        }
        waits = [d for d in sleeps.delays if d >= vendor.retry_after_s]
        assert waits and waits[0] <= vendor.retry_after_s + 1, f"waited {sleeps.delays}"

    async def test_429_retry_after_http_date_is_waited_out(
        self, session: ConnectorSession, vendor: FakeVendor, sleeps: Sleeps, wire: ConnectorWire
    ) -> None:
        vendor.faults[1] = "429-date"
        assert await self._walk(session, wire) == {
            vendor.wire.item_id(d) for d in vendor.corpus.live()
        }
        assert any(20 <= d <= 31 for d in sleeps.delays), f"waited {sleeps.delays}"

    async def test_throttling_in_the_vendor_s_own_dialect_is_waited_out(
        self, session: ConnectorSession, vendor: FakeVendor, sleeps: Sleeps, wire: ConnectorWire
    ) -> None:
        """The vendor throttles the way its docs say it does (``ConnectorWire.throttle_reply``:
        a reset header only, a 403 with a reason, ...): the connector's policy reads it, waits
        and goes on; nothing is lost."""
        vendor.faults[1] = "throttle"
        vendor.waited = lambda: sum(sleeps.delays)  # throttled until the window has passed
        assert await self._walk(session, wire) == {
            vendor.wire.item_id(d) for d in vendor.corpus.live()
        }
        assert session.http.stats.throttled >= 1, "the vendor's throttling was not recognised"
        assert sum(sleeps.delays) >= vendor.retry_after_s, sleeps.delays
        assert max(sleeps.delays) <= vendor.retry_after_s + 3, sleeps.delays

    async def test_timeout_is_retried(
        self, session: ConnectorSession, vendor: FakeVendor, wire: ConnectorWire
    ) -> None:
        vendor.faults[1] = "timeout"
        assert await self._walk(session, wire) == {
            vendor.wire.item_id(d) for d in vendor.corpus.live()
        }
        assert session.http.stats.retries >= 1, "a timed-out request was not retried"

    async def test_persistent_timeouts_raise_a_typed_error(
        self, session: ConnectorSession, vendor: FakeVendor, wire: ConnectorWire
    ) -> None:
        vendor.faults["*"] = "timeout"
        with pytest.raises(VendorTimeoutError):
            await self._walk(session, wire)
        assert len(vendor.data_requests) == session.http.policy.max_attempts, (
            f"{len(vendor.data_requests)} requests, the policy allows "
            f"{session.http.policy.max_attempts} attempts"
        )

    async def test_401_refreshes_once_and_retries(
        self, session: ConnectorSession, vendor: FakeVendor, service: ConnectionService,
        wire: ConnectorWire,
    ) -> None:  # fmt: skip
        require(session.adapter, "refresh")
        vendor.revoke_access()
        assert await self._walk(session, wire) == {
            vendor.wire.item_id(d) for d in vendor.corpus.live()
        }
        assert len(vendor.token_requests) == 1, "exactly one refresh"
        async with service.db.session() as s:
            grant = await service.store.read_grant(s, session.connection.id)
        assert grant is not None and grant.access_token == vendor.access, (
            "the refreshed access token was not saved"
        )
        assert grant.refresh_token == vendor.refresh, "the rotated refresh token was not saved"

    async def test_invalid_grant_asks_for_reconsent(
        self, session: ConnectorSession, vendor: FakeVendor, service: ConnectionService,
        wire: ConnectorWire,
    ) -> None:  # fmt: skip
        require(session.adapter, "refresh")
        vendor.revoke_access()
        vendor.refresh_revoked = True
        with pytest.raises(NeedsReconsentError):
            await self._walk(session, wire)
        assert len(vendor.token_requests) == 1, "invalid_grant must not be retried"
        after = await service.get(session.connection.id, user_id=USER)
        assert after.status == "needs_reconsent", f"connection left as {after.status!r}"

    async def test_expired_cursor_starts_a_full_resync(
        self, session: ConnectorSession, corpus: FakeCorpus, wire: ConnectorWire
    ) -> None:
        require(session.adapter, "sync")
        if not wire.cursors_expire:
            pytest.skip(f"{session.adapter.service}'s checkpoint is a time: it cannot expire")
        _, checkpoint = await run_sync(session, wire.scope, None)
        corpus.expire_cursors()
        try:  # a connector whose checkpoints cannot expire must list everything again
            raw = [p async for p in session.adapter.sync(session, wire.scope, checkpoint)]
            assert all(p.full_listing for p in raw), "an expired cursor was used silently"
        except CursorExpiredError:
            pass
        pages, _ = await run_sync(session, wire.scope, checkpoint)
        assert all(p.full_listing for p in pages), "the re-sync after expiry is not a full listing"
        assert {i.id for p in pages for i in p.items} == {wire.item_id(d) for d in corpus.live()}, (
            "the full re-sync lost or added items"
        )

    async def test_duplicates_across_pages_are_harmless(
        self, session: ConnectorSession, corpus: FakeCorpus, wire: ConnectorWire
    ) -> None:
        corpus.duplicate_boundary = True
        assert await self._walk(session, wire) == {wire.item_id(d) for d in corpus.live()}

    async def test_list_ids_is_complete_or_raises(
        self, session: ConnectorSession, vendor: FakeVendor, wire: ConnectorWire
    ) -> None:
        require(session.adapter, "list_ids")
        ids = [i async for page in session.adapter.list_ids(session, wire.scope) for i in page]
        assert set(ids) == {vendor.wire.item_id(d) for d in vendor.corpus.live()}, (
            f"{session.adapter.service}: list_ids lost or added items"
        )
        vendor.faults.update({n: "500" for n in range(len(vendor.data_requests) + 2, 200)})
        with pytest.raises(ConnectorError):
            async for _ in session.adapter.list_ids(session, wire.scope):
                pass


class _Adapters:
    """A plugin object contributing exactly one adapter (the one under test)."""

    def __init__(self, adapter: Any) -> None:
        self.adapter = adapter

    @hookimpl
    def nyla_connectors(self) -> list[Any]:
        return [self.adapter]


def _scheme(adapter: Any) -> str:
    policy = getattr(adapter, "http_policy", None)
    return getattr(policy, "auth_scheme", "Bearer")
