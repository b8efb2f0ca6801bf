"""Kernel tables and job helpers for integration tests that check what landed in the database.

A plugin's tests may assert on rows the kernel wrote for it (indexed chunks, jobs, sync
state, audit entries), drive a sync with a job handle of their own, or run a walker runner
with another per-source lock, without importing kernel internals: these names are the
supported way. They are for tests only; plugin code talks to the kernel through ``nyla`` and
``nyla.sdk``.
"""

from __future__ import annotations

from nyla.jobs.runtime import JobHandle
from nyla.jobs.store import JobStore, this_worker
from nyla.jobs.tables import STALE_AFTER_S, Job, shown_status
from nyla.tables.knowledge import ContentChunk, FileContentIndex, KnowledgeAudit
from nyla.tables.sync import SyncState
from nyla.walkers.lock import LockWait
from nyla.walkers.runner import WalkerRunner

__all__ = [
    "STALE_AFTER_S",
    "ContentChunk",
    "FileContentIndex",
    "Job",
    "JobHandle",
    "JobStore",
    "KnowledgeAudit",
    "LockWait",
    "SyncState",
    "WalkerRunner",
    "shown_status",
    "this_worker",
]
