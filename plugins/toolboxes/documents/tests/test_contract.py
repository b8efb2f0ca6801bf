"""The documents toolbox passes the kernel's ToolboxContract."""

from __future__ import annotations

import pytest

import nyla_toolbox_documents
from nyla.testing import ToolboxContract


class TestDocumentsToolboxContract(ToolboxContract):
    @pytest.fixture
    def plugin(self):
        return nyla_toolbox_documents


def test_nyla_tools_list_shows_every_tool_in_the_documents_toolbox():
    import json

    from nyla.testing import invoke_cli

    done = invoke_cli(["tools", "list", "--toolbox", "documents", "--json"])
    assert done.exit_code == 0, done.output
    listed = {t["name"] for t in json.loads(done.output)}
    assert listed == {
        "browseContainer",
        "readContentObjects",
        "readSection",
        "extractContainerItem",
        "getUdmStructure",
        "walkUdmBlocks",
        "filterUdmByType",
        "renderDocument",
        "createChart",
        "generateImage",
    }
