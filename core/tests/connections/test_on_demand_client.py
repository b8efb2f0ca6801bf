"""A session's HTTP client is made at its first request and closed with the session; a
session whose connector sends nothing makes none (a local folder's sync imports no httpx)."""

from __future__ import annotations

import httpx
import pytest
from cryptography.fernet import Fernet

from nyla import hookimpl
from nyla.kernel import Kernel
from nyla.plugins import PluginHost
from nyla.sdk.connectors import BaseConnector

pytestmark = pytest.mark.db


class Echo(BaseConnector):
    """A service whose check asks it once for its name."""

    service = "echo"
    label = "Echo"
    auth_modes = ("none",)
    base_url = "https://echo.example"

    async def check(self, ctx) -> str:
        return (await ctx.http.get_json("/whoami"))["name"]


class EchoPlugin:
    @hookimpl
    def nyla_connectors(self):
        return [Echo()]


class Network(httpx.MockTransport):
    """The fake network, counting requests and closes."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.closed = 0
        super().__init__(self.answer)

    def answer(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(str(request.url))
        return httpx.Response(200, json={"name": "echo"})

    async def aclose(self) -> None:
        self.closed += 1


async def test_the_client_is_made_at_the_first_request_and_closed_with_the_session(db):
    net = Network()
    host = PluginHost.from_plugins([EchoPlugin()], names=["echo"])
    settings = {"secret_key": Fernet.generate_key(), "transport": net}
    kernel = Kernel(plugins=host, db=db, settings=settings)
    conn = await kernel.connections.add("echo", user_id="ada")

    async with kernel.connections.open(conn.id, user_id="ada") as session:
        pass
    assert not session.http.client.made and net.closed == 0  # nothing sent, nothing made

    async with kernel.connections.open(conn.id, user_id="ada") as session:
        assert not session.http.client.made
        assert await session.adapter.check(session) == "echo"
        assert session.http.client.made and net.requests == ["https://echo.example/whoami"]
        assert str(session.http.client.base_url) == "https://echo.example"
        assert net.closed == 0
    assert net.closed == 1
    with pytest.raises(RuntimeError, match="closed"):
        await session.http.get_json("/whoami")

    result = await kernel.connections.test(conn.id, user_id="ada")
    assert result.ok and result.message == "echo" and net.closed == 2
