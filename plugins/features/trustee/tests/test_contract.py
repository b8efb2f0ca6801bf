"""The trustee feature passes the kernel's FeatureContract."""

from __future__ import annotations

import pytest

import nyla_feature_trustee
from nyla.testing import FeatureContract


class TestTrusteeFeatureContract(FeatureContract):
    @pytest.fixture
    def plugin(self):
        return nyla_feature_trustee
