"""Fixtures: a kernel with the documents toolbox on the test database, and a helper that
stores a file of the test user."""

from __future__ import annotations

from typing import Any

import pytest

from nyla.sdk import RunContext

USER = "ada"


@pytest.fixture
def kernel(db: Any, make_kernel: Any) -> Any:
    import nyla_toolbox_documents

    return make_kernel(nyla_toolbox_documents, db=db, builtins=True)


@pytest.fixture
def store(kernel: Any) -> Any:
    async def save(name: str, content: bytes, mime_type: str | None = None) -> str:
        item = await kernel.files.save(name, content, RunContext(user_id=USER), mime_type=mime_type)
        return str(item.id)

    return save
