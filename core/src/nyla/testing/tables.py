"""Kernel tables and job helpers for integration tests that check what landed in the database.

A plugin's tests may assert on rows the kernel wrote for it (indexed chunks, jobs, sync
state, audit entries) without importing kernel internals: these names are the supported
way. They are for tests only; plugin code talks to the kernel through ``nyla`` and
``nyla.sdk``.
"""

from __future__ import annotations

from nyla.jobs.store import JobStore, this_worker
from nyla.jobs.tables import Job
from nyla.knowledge.tables import ContentChunk, FileContentIndex, KnowledgeAudit
from nyla.walkers.tables import SyncState

__all__ = [
    "ContentChunk",
    "FileContentIndex",
    "Job",
    "JobStore",
    "KnowledgeAudit",
    "SyncState",
    "this_worker",
]
