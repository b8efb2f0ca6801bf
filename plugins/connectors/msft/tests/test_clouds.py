"""Sovereign clouds (issue 28, fault 3): a connection in the US Government or China cloud
signs in, refreshes and reads Graph there, never at login.microsoftonline.com/common."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

import nyla_connector_msft
from nyla.sdk import ConfigurationError
from nyla.sdk.connectors import TokenGrant
from nyla_connector_msft.connector import MsftConnector

TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"


class Cloud:
    """A national cloud's login and Graph hosts: records where each request went."""

    def __init__(self, login_host: str, graph_host: str) -> None:
        self.login_host, self.graph_host = login_host, graph_host
        self.seen: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        if request.url.host == self.login_host and request.url.path.endswith("/token"):
            # learn.microsoft.com/entra/identity-platform/v2-oauth2-auth-code-flow#refresh-the-access-token
            return httpx.Response(
                200,
                json={
                    "token_type": "Bearer",
                    "scope": "Files.Read.All",
                    "expires_in": 3599,
                    "access_token": "access-2",
                    "refresh_token": "refresh-2",
                },
            )
        if request.url.host != self.graph_host:
            return httpx.Response(404, json={"error": {"code": "wrongCloud"}})
        if request.headers.get("authorization") != "Bearer access-2":
            return httpx.Response(
                401, json={"error": {"code": "InvalidAuthenticationToken", "message": "expired"}}
            )
        # learn.microsoft.com/graph/api/driveitem-list-children
        return httpx.Response(200, json={"value": []})


@pytest.mark.parametrize(
    ("cloud", "login_host", "graph_host"),
    [
        ("usgov", "login.microsoftonline.us", "graph.microsoft.us"),
        ("usgov-dod", "login.microsoftonline.us", "dod-graph.microsoft.us"),
        ("china", "login.chinacloudapi.cn", "microsoftgraph.chinacloudapi.cn"),
    ],
)
async def test_a_national_cloud_connection_refreshes_and_reads_in_its_cloud(
    vendor_kernel: Any, cloud: str, login_host: str, graph_host: str
) -> None:
    net = Cloud(login_host, graph_host)
    kernel = vendor_kernel(net, nyla_connector_msft, env={"NYLA_MSFT_CLIENT_ID": "client-id"})
    service = kernel.connections
    conn = await service.add(
        "msft",
        user_id="u1",
        grant=TokenGrant(
            access_token="access-1",
            refresh_token="refresh-1",
            expires_at=datetime.now(UTC) + timedelta(hours=1),
        ),
        settings={"cloud": cloud, "tenant": TENANT},
    )
    async with service.open(conn.id, user_id="u1") as session:
        await session.adapter.browse(session, "/drive")
    hosts = [r.url.host for r in net.seen]
    assert "login.microsoftonline.com" not in hosts and "graph.microsoft.com" not in hosts
    [token] = [r for r in net.seen if r.url.host == login_host]
    assert token.url.path == f"/{TENANT}/oauth2/v2.0/token"
    form = dict(httpx.QueryParams(token.content.decode()))
    assert form["grant_type"] == "refresh_token" and form["refresh_token"] == "refresh-1"
    graph_calls = [r for r in net.seen if r.url.host == graph_host]
    assert graph_calls and all(r.url.path.startswith("/v1.0/") for r in graph_calls)


def test_scopes_name_the_national_graph_and_the_global_cloud_is_unchanged() -> None:
    adapter = MsftConnector()
    assert adapter.oauth_for({}) is adapter.oauth
    oauth = adapter.oauth_for({"cloud": "usgov", "tenant": "contoso.onmicrosoft.us"})
    assert oauth is not None
    assert oauth.authorize_url == (
        "https://login.microsoftonline.us/contoso.onmicrosoft.us/oauth2/v2.0/authorize"
    )
    assert "https://graph.microsoft.us/Files.Read.All" in oauth.scopes
    assert "offline_access" in oauth.scopes


@pytest.mark.parametrize(
    "settings",
    [{"cloud": "mars"}, {"tenant": "../../evil"}, {"tenant": "a b"}, {"tenant": "x" * 300}],
)
def test_an_unknown_cloud_or_a_malformed_tenant_is_a_clear_error(settings) -> None:
    with pytest.raises(ConfigurationError, match="msft"):
        MsftConnector().oauth_for(settings)
