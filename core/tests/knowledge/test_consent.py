"""Consent revoke purges exactly the affected chunks, synchronously; settings API; inventory."""

from __future__ import annotations

import pytest
from sqlalchemy import func, literal_column, select

from nyla.jobs.store import JobStore
from nyla.knowledge.consent import PermissionDeniedError
from nyla.knowledge.limits import SettingsValidationError
from nyla.models.datasource import DownloadedFile
from nyla.models.files import Scope
from nyla.models.knowledge import SearchQuery
from nyla.tables.knowledge import ContentChunk, DataSource, FileContentIndex, KnowledgeAudit

from .conftest import ctx, item


async def _files(kernel) -> dict[str, int]:
    """Chunks per file id, counted from the chunk table (a chunk whose file index row is
    gone would show up under ``None``)."""
    async with kernel.db.session() as s:
        rows = await s.execute(
            select(FileContentIndex.file_id, func.count())
            .select_from(ContentChunk)
            .outerjoin(
                FileContentIndex,
                FileContentIndex.file_no == ContentChunk.id.op(">>")(literal_column("20")),
            )
            .group_by(FileContentIndex.file_id)
        )
        return dict(rows.all())


async def _world(kernel):
    k = kernel.knowledge
    await k.governance.add_connection("c1", "msft", user_id="u1", mandate_id="m1")
    await k.governance.add_connection("c2", "google", user_id="u1", mandate_id="m1")
    await k.governance.add_data_source(
        "root", "c1", "/", user_id="u1", mandate_id="m1", rag_index_enabled=True
    )
    await k.governance.add_data_source(
        "hr", "c1", "/HR", user_id="u1", mandate_id="m1", neutralize=True
    )
    await k.governance.add_data_source(
        "pub", "c1", "/HR/Public", user_id="u1", mandate_id="m1", rag_index_enabled=True
    )
    await k.governance.add_data_source(
        "g", "c2", "/", user_id="u1", mandate_id="m1", rag_index_enabled=True
    )
    docs = {
        ("root", "/Sales/plan.txt"): "sales plan for the year",
        ("hr", "/HR/salaries.txt"): "salary list, contact hr@example.ch",
        ("pub", "/HR/Public/handbook.txt"): "employee handbook and holidays",
        ("g", "/notes.txt"): "notes from google drive",
    }
    for n, ((source, path), text) in enumerate(docs.items()):
        result = await k.indexing.ingest(
            DownloadedFile(name=path.rsplit("/", 1)[1], content=text.encode()),
            data_source_id=source,
            entry_id=f"e{n}",
            entry_path=path,
            context=ctx(),
        )
        assert result.status == "indexed", result.error
    # a file indexed outside any data source
    await k.indexing.index_file(item("upload", "upload.txt"), b"a direct upload", context=ctx())


async def test_ingest_inherits_neutralize_and_scope_from_the_tree(kernel):
    await _world(kernel)
    async with kernel.db.session() as s:
        salaries = await s.get(FileContentIndex, "c1:e1")
        handbook = await s.get(FileContentIndex, "c1:e2")
    assert salaries.is_neutralized and handbook.is_neutralized  # /HR sets neutralize
    assert salaries.source_path == "/HR/salaries.txt" and salaries.connection_id == "c1"
    async with kernel.db.session() as s:
        hr = await s.get(DataSource, "hr")
        public = await s.get(DataSource, "pub")
    assert hr.last_indexed is not None and hr.last_indexed > 0
    assert public.last_indexed is not None  # the handbook came through /HR/Public
    chunks = await kernel.knowledge.search(SearchQuery(text="salary list", context=ctx(), k=3))
    assert all("hr@example.ch" not in h.text for h in chunks.hits)


async def test_revoking_a_tree_element_purges_exactly_its_files(kernel):
    await _world(kernel)
    before = await _files(kernel)
    assert set(before) == {"c1:e0", "c1:e1", "c1:e2", "c2:e3", "upload"}
    result = await kernel.knowledge.governance.set_rag_index_enabled("hr", False, actor="u1")
    after = await _files(kernel)
    # /HR/salaries goes; /HR/Public keeps its explicit True; everything else stays
    assert set(after) == set(before) - {"c1:e1"}
    assert result.files == 1 and result.chunks == before["c1:e1"]
    assert all(after[f] == before[f] for f in after)
    # revoking the root purges every c1 file whose effective policy is now off
    result = await kernel.knowledge.governance.set_rag_index_enabled("root", False, actor="u1")
    assert set(await _files(kernel)) == {"c1:e2", "c2:e3", "upload"}
    assert result.files == 1
    async with kernel.db.session() as s:
        actions = list((await s.execute(select(KnowledgeAudit.action))).scalars())
    assert actions.count("datasource_rag_index_changed") == 2
    # and a disabled path refuses new files
    refused = await kernel.knowledge.indexing.ingest(
        DownloadedFile(name="new.txt", content=b"new"),
        data_source_id="root",
        entry_id="n",
        entry_path="/Sales/new.txt",
        context=ctx(),
    )
    assert refused.status == "failed" and "switched off" in refused.error


async def test_revoking_connection_consent_purges_it_and_cancels_jobs(kernel):
    await _world(kernel)
    jobs = JobStore(kernel.db)
    running = await jobs.start("walk", user_id="u1", connection_id="c1")
    other = await jobs.start("walk", user_id="u1", connection_id="c2")
    before = await _files(kernel)
    result = await kernel.knowledge.governance.set_knowledge_consent("c1", False, actor="u1")
    after = await _files(kernel)
    assert set(after) == {"c2:e3", "upload"}
    assert result.files == 3
    assert result.chunks == sum(before[f] for f in ("c1:e0", "c1:e1", "c1:e2"))
    assert await jobs.is_cancelled(running) and not await jobs.is_cancelled(other)
    with pytest.raises(PermissionDeniedError):
        await kernel.knowledge.governance.set_knowledge_consent("c2", False, actor="intruder")
    assert set(await _files(kernel)) == {"c2:e3", "upload"}


async def test_removing_a_connection_purges_its_files_through_the_knowledge_store(kernel):
    """The connection store reaches the index only through the purge it is built with (the
    knowledge store's): a removal purges the connection's files and chunks, cancels its jobs
    and writes the audit record in the same transaction; a refused removal purges nothing."""
    await _world(kernel)
    jobs = JobStore(kernel.db)
    queued = await jobs.start("walk", user_id="u1", connection_id="c1")
    before = await _files(kernel)
    with pytest.raises(PermissionDeniedError):
        await kernel.connections.remove("c1", user_id="intruder")
    assert await _files(kernel) == before
    result = await kernel.connections.remove("c1", user_id="u1")
    assert set(await _files(kernel)) == {"c2:e3", "upload"}
    assert result.files == 3 and result.reason == "connection removed"
    assert result.chunks == sum(before[f] for f in ("c1:e0", "c1:e1", "c1:e2"))
    assert await jobs.is_cancelled(queued)
    async with kernel.db.session() as s:
        removed = (
            await s.execute(
                select(KnowledgeAudit.details).where(KnowledgeAudit.action == "connection_removed")
            )
        ).scalar_one()
        assert await s.get(DataSource, "root") is None  # its data sources went with it
    assert removed == {"purgedFiles": 3, "purgedChunks": result.chunks, "cancelledJobs": 1}


async def test_settings_update_validation_permissions_and_audit(kernel):
    await _world(kernel)
    k = kernel.knowledge
    updated = await k.sources.update_settings("root", {"ragLimits": {"maxItems": 7}}, actor="u1")
    assert updated.settings == {"ragLimits": {"maxItems": 7}}
    assert updated.limits.values["max_items"] == 7 and updated.limits.kind == "files"
    assert updated.limits.ranges["maxItems"].min == 1
    assert (await k.sources.limits("root")).overrides == {"max_items": 7}
    assert (await k.sources.limits("root")).values["max_items"] == 7
    assert (await k.sources.limits("pub")).overrides == {}  # no inheritance
    with pytest.raises(SettingsValidationError):
        await k.sources.update_settings("root", {"ragLimits": {}, "scope": "global"}, actor="u1")
    with pytest.raises(PermissionDeniedError):
        await k.sources.update_settings("root", {"ragLimits": {"maxItems": 1}}, actor="u2")
    assert (await k.sources.limits("root")).overrides == {"max_items": 7}
    async with kernel.db.session() as s:
        audits = list((await s.execute(select(KnowledgeAudit))).scalars())
    changed = [a for a in audits if a.action == "datasource_settings_changed"]
    assert len(changed) == 1 and changed[0].category == "permission"
    assert changed[0].details["after"] == {"ragLimits": {"maxItems": 7}}
    estimate = await k.sources.estimate_cost("root")
    assert estimate.basis.kind == "files" and estimate.source_id == "root"


async def test_inventory_per_user_mandate_platform_and_purge(kernel):
    await _world(kernel)
    await kernel.knowledge.indexing.index_file(
        item("g1", "global.txt", scope=Scope.GLOBAL, user="admin", mandate=None),
        b"global notes",
        context=ctx("admin"),
    )
    jobs = JobStore(kernel.db)
    await jobs.start("index", user_id="u1", mandate_id="m1", total=3)
    mine = await kernel.knowledge.inventory("user", "u1")
    assert mine.totals.files == 5 and mine.totals.chunks >= 5
    assert len(mine.jobs) == 1 and mine.jobs[0].total == 3
    platform = await kernel.knowledge.inventory("platform")
    assert platform.totals.files == 6
    assert {r.scope for r in platform.rows} == {"personal", "global"}
    mandate = await kernel.knowledge.inventory("mandate", "m1")
    assert mandate.totals.files == 5
    purged = await kernel.knowledge.governance.purge(actor="u1", connection_id="c2")
    assert purged.files == 1
    assert (await kernel.knowledge.inventory("user", "u1")).totals.files == 4
    with pytest.raises(ValueError):
        await kernel.knowledge.governance.purge(actor="u1")


async def test_purge_checks_who_may_delete_and_deletes_nothing_when_refused(kernel):
    k = kernel.knowledge
    await k.indexing.index_file(
        item("p1", "mine.txt", user="u1"), b"personal notes", context=ctx("u1")
    )
    await k.indexing.index_file(
        item("m1f", "shared.txt", scope=Scope.MANDATE, user="u1"), b"mandate notes", context=ctx()
    )
    before = await _files(kernel)

    with pytest.raises(PermissionDeniedError, match="may not purge 2 of the 2"):
        await k.governance.purge(actor="u2", owner_user_id="u1")
    with pytest.raises(PermissionDeniedError, match="may not purge 1 of the 2"):
        await k.governance.purge(actor="u2", mandate_id="m1", is_mandate_admin=True)
    assert await _files(kernel) == before

    mandate = await k.governance.purge(
        actor="u2", mandate_id="m1", file_ids=["m1f"], is_mandate_admin=True
    )
    assert mandate.files == 1
    platform = await k.governance.purge(actor="ops", owner_user_id="u1", is_platform_admin=True)
    assert platform.files == 1 and await _files(kernel) == {}
