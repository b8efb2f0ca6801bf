"""The datasources toolbox over the example drive at the wire: search-first prompt, inline
metadata, ownership checks, downloads through the file bridge with the inherited policy."""

from __future__ import annotations

import httpx
import pytest
from cryptography.fernet import Fernet

from nyla.agent.tool_services import tool_services
from nyla.models.agent import AgentConfig, RunContext
from nyla.models.datasource import TokenGrant
from nyla.models.tools import ToolContext
from nyla.testing.fake_vendor import FakeCorpus, FakeVendor

from .example_drive import ExampleDrive, ExampleDrivePlugin, ExampleDriveWire

GRANT = TokenGrant(access_token="access-1", refresh_token="refresh-1")


@pytest.fixture
def corpus() -> FakeCorpus:
    corpus = FakeCorpus(page_size=2)
    for i in range(3):
        corpus.add(f"invoice-{i}.txt", f"Invoice {i} for Muster AG", "/Finance")
    return corpus


@pytest.fixture
def kernel(db, make_kernel, scripted, corpus, monkeypatch):
    monkeypatch.setenv("EXAMPLE_CLIENT_ID", "client")
    vendor = FakeVendor(ExampleDriveWire(), corpus, ExampleDrive.oauth.token_url)
    provider = scripted(lambda request, index: "ok")
    settings = {"secret_key": Fernet.generate_key(), "transport": httpx.MockTransport(vendor)}
    return make_kernel(provider, ExampleDrivePlugin(), db=db, settings=settings)


def _tool(kernel, name):
    return next(t for t in kernel.plugins.toolboxes["datasources"].tools if t.name == name)


async def _call(kernel, name, user="u1", **args):
    tool = _tool(kernel, name)
    ctx = ToolContext(run=RunContext(user_id=user), services=tool_services(kernel.agent.services))
    return await tool.handler(tool.args_model.model_validate(args), ctx)


async def test_tools_search_first_and_check_the_owner(kernel) -> None:
    conn = await kernel.connections.add("exampledrive", user_id="u1", grant=GRANT, label="Drive")
    listed = await _call(kernel, "listConnections")
    assert conn.id in listed.content and "search" in listed.data[0]["can"]
    found = await _call(kernel, "searchDataSource", connectionId=conn.id, query="invoice")
    assert found.success and found.data["cursor"], "two per page: a cursor for more"
    assert "invoice-0.txt" in found.content and "path /Finance/invoice-0.txt" in found.content
    more = await _call(kernel, "searchDataSource", connectionId=conn.id, query="invoice",
                       cursor=found.data["cursor"])  # fmt: skip
    assert [i["title"] for i in more.data["items"]] == ["invoice-2.txt"]
    other = await _call(kernel, "searchDataSource", user="u2", connectionId=conn.id, query="x")
    assert not other.success and other.error_details.code == "NOT_FOUND"
    upload = await _call(kernel, "uploadToExternal", connectionId=conn.id, fileId="nope")
    assert not upload.success


async def test_download_inherits_the_data_source_policy(kernel, corpus) -> None:
    conn = await kernel.connections.add("exampledrive", user_id="u1", grant=GRANT)
    await kernel.knowledge.governance.add_data_source(
        "fin", conn.id, "/Finance", user_id="u1", neutralize=True
    )
    doc = corpus.live()[1]
    got = await _call(kernel, "downloadFromDataSource", connectionId=conn.id, itemId=doc.id)
    assert got.success, got.error
    item = await kernel.files.get(got.data["fileId"], RunContext(user_id="u1"))
    assert item.neutralize and item.data_source_id == "fin"
    assert item.tags == ["datasource:exampledrive"]
    assert await kernel.files.read_bytes(item.id, RunContext(user_id="u1")) == doc.content
    missing = await _call(kernel, "downloadFromDataSource", connectionId=conn.id, itemId="zzz")
    assert not missing.success and missing.error_details.code == "NOT_FOUND"


async def test_the_system_prompt_says_search_first_when_connections_exist(
    db, make_kernel, scripted
) -> None:
    seen = []

    def script(request, index):
        seen.append(request.messages[0].text)
        return "done"

    kernel = make_kernel(scripted(script), ExampleDrivePlugin(), db=db,
                         settings={"secret_key": Fernet.generate_key()})  # fmt: skip
    async for _ in kernel.agent.run("hi", AgentConfig(), RunContext(user_id="u1")):
        pass
    assert "Search first" not in seen[0], "no connections: no block"
    await kernel.connections.add("exampledrive", user_id="u1", grant=GRANT)
    async for _ in kernel.agent.run("find the invoice", AgentConfig(), RunContext(user_id="u1")):
        pass
    assert "Search first" in seen[1] and ExampleDrive.query_syntax in seen[1]
    assert ExampleDrive.query_syntax in _tool(kernel, "searchDataSource").description
