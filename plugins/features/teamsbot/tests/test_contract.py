"""The Teams bot feature passes the kernel's FeatureContract."""

from __future__ import annotations

import pytest

import nyla_feature_teamsbot
from nyla.testing import FeatureContract


class TestTeamsBotFeatureContract(FeatureContract):
    @pytest.fixture
    def plugin(self):
        return nyla_feature_teamsbot
