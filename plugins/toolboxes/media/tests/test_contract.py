"""The media toolbox passes the kernel's ToolboxContract and is listed by ``nyla tools list``."""

from __future__ import annotations

import json

import pytest

import nyla_toolbox_media
from nyla.testing import ToolboxContract, invoke_cli


class TestMediaToolboxContract(ToolboxContract):
    @pytest.fixture
    def plugin(self):
        return nyla_toolbox_media


def test_nyla_tools_list_shows_every_tool_in_the_media_toolbox():
    done = invoke_cli(["tools", "list", "--toolbox", "media", "--json"])
    assert done.exit_code == 0, done.output
    assert {t["name"] for t in json.loads(done.output)} == {
        "describeImage",
        "textToSpeech",
        "speechToText",
    }
