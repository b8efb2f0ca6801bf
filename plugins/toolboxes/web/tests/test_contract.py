"""The web toolbox passes the kernel's ToolboxContract and is listed by ``nyla tools list``."""

from __future__ import annotations

import json

import pytest

import nyla_toolbox_web
from nyla.testing import ToolboxContract, invoke_cli


class TestWebToolboxContract(ToolboxContract):
    @pytest.fixture
    def plugin(self):
        return nyla_toolbox_web


def test_nyla_tools_list_shows_every_tool_in_the_web_toolbox():
    done = invoke_cli(["tools", "list", "--toolbox", "web", "--json"])
    assert done.exit_code == 0, done.output
    listed = {t["name"]: t for t in json.loads(done.output)}
    assert set(listed) == {"webSearch", "readUrl"}
