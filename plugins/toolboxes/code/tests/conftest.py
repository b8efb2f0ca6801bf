"""Fixtures: a kernel with the code toolbox on the test database."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

USER = "ada"
needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed"
)


@pytest.fixture
def kernel(db: Any, make_kernel: Any) -> Any:
    import nyla_toolbox_code

    return make_kernel(nyla_toolbox_code, db=db, builtins=True)
