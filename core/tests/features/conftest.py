"""Shared fixtures of the feature tests: a kernel with the trustee feature over one seeded
schema per module (the seeded year is read-only for most tests)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from nyla.db import Database

trustee = pytest.importorskip("nyla_feature_trustee")

INSTANCE = "acme-treuhand"


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def seeded_db(embedded_pg: str) -> AsyncIterator[Database]:
    """A schema with the trustee year seeded for :data:`INSTANCE` (shared by a module)."""
    database = Database(embedded_pg, schema=f"t_{uuid.uuid4().hex[:12]}")
    await database.ensure_ready()
    try:
        yield database
    finally:
        await database.drop_schema()
        await database.dispose()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def seeded_kernel(seeded_db: Database) -> AsyncIterator[Any]:
    """A kernel over the trustee feature with :data:`INSTANCE` seeded."""
    from nyla.kernel import Kernel
    from nyla.plugins import PluginHost

    kernel = Kernel(plugins=PluginHost.from_plugins([trustee], names=["trustee"]), db=seeded_db)
    await kernel.features.seed("trustee", INSTANCE)
    yield kernel


@pytest.fixture
def dataset() -> Any:
    """The generated year the seeded instance holds."""
    from nyla_feature_trustee.generator import generate

    return generate()
