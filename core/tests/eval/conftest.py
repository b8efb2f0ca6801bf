"""Fixtures of the eval tests: a kernel with the trustee feature on a fresh schema."""

from __future__ import annotations

import pytest

trustee = pytest.importorskip("nyla_feature_trustee")


@pytest.fixture
def eval_kernel(db, make_kernel):
    """A kernel over the trustee feature only (the harness installs the eval policies)."""
    return make_kernel(trustee, db=db, builtins=False)
