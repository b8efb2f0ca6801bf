"""The knowledge store's storage in the billing report: a snapshot of bytes and chunks per
user and mandate, priced per GB-month and per thousand chunks from the settings."""

from __future__ import annotations

import pytest

from nyla.models.agent import RunContext
from nyla.models.files import FileItem, Scope

pytestmark = pytest.mark.db

GB = 1024**3


def vectors(texts: list[str]) -> list[list[float]]:
    return [[float(len(t)), 1.0, 0.0] for t in texts]


async def test_storage_is_measured_and_priced_per_user_and_mandate(scripted, make_kernel, db):
    provider = scripted(lambda r, i: "ok", embed_fn=vectors)
    settings = {
        "knowledge": {"embedding_model": "scripted:model"},
        "billing": {"storage_chf_per_gb_month": 2.0, "chunk_chf_per_1000_month": 0.5},
    }
    kernel = make_kernel(provider, db=db, settings=settings)
    files = {("alice", "m1"): [b"Payroll runs on the 25th. " * 40], ("bob", "m2"): [b"VAT " * 10]}
    for (user, mandate), contents in files.items():
        for n, content in enumerate(contents):
            item = FileItem(
                id=f"{user}-{n}",
                name=f"{user}-{n}.txt",
                mime_type="text/plain",
                scope=Scope.PERSONAL,
                user_id=user,
                mandate_id=mandate,
            )
            context = RunContext(user_id=user, mandate_id=mandate)
            result = await kernel.knowledge.indexing.index_file(item, content, context=context)
            assert result.status.value == "indexed", result
    report = await kernel.billing.report(mandate_id="m1")
    (line,) = report.storage
    assert (line.user_id, line.mandate_id) == ("alice", "m1")
    assert line.bytes == len(files[("alice", "m1")][0])
    assert line.chunks >= 1
    assert line.cost_chf == pytest.approx(line.bytes / GB * 2.0 + line.chunks / 1000 * 0.5)
    assert report.storage_chf == pytest.approx(line.cost_chf)
    assert report.total_chf == pytest.approx(report.calls_chf + report.storage_chf)
    assert any(x.operation == "embedding" for x in report.lines)  # indexing was billed too
    everyone = await kernel.billing.report(snapshot=False)
    assert {(x.user_id, x.mandate_id) for x in everyone.storage} == set(files)
