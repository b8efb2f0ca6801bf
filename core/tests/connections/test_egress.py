"""No connection makes the server send a request to its own or its private network (issue 28,
fault 2): addresses are checked after resolution and on every redirect, undeclared URL
settings are ignored, and every installed connector is tried."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from cryptography.fernet import Fernet

from nyla.connections.egress import (
    EgressPolicy,
    EgressRefusedError,
    GuardedTransport,
    refused_reason,
)
from nyla.connections.errors import ConnectorError
from nyla.connections.settings import server_only_keys
from nyla.kernel import Kernel
from nyla.models.datasource import TokenGrant
from nyla.plugins import PluginHost

REFUSED = [
    "127.0.0.1",
    "127.8.9.10",
    "10.0.0.5",
    "172.16.3.4",
    "192.168.1.1",
    "169.254.169.254",  # the cloud metadata service
    "100.64.0.1",  # shared address space
    "0.0.0.0",
    "224.0.0.1",
    "255.255.255.255",
    "::1",
    "::",
    "fe80::1",
    "fd00:ec2::254",  # AWS's IPv6 metadata service
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "2002:7f00:1::",  # 6to4 around 127.0.0.1
    "2001:db8::1",  # documentation
]
PUBLIC = ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "20.190.151.7"]


@pytest.mark.parametrize("address", REFUSED)
def test_private_and_local_addresses_are_refused(address):
    assert refused_reason(address) is not None


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_pass(address):
    assert refused_reason(address) is None


class Recorder:
    """The network: records every request that reaches it, answers what it is told."""

    def __init__(self, answer: Any = None) -> None:
        self.seen: list[httpx.Request] = []
        self.answer = answer or (lambda request: httpx.Response(200, json={}))

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        return self.answer(request)


def table_resolver(table: dict[str, list[str]]):
    async def resolve(host: str, port: int) -> list[str]:
        if host not in table:
            raise OSError(f"unknown host {host}")
        return table[host]

    return resolve


async def get(transport: httpx.AsyncBaseTransport, url: str) -> httpx.Response:
    async with httpx.AsyncClient(transport=transport, follow_redirects=True) as client:
        return await client.get(url)


async def test_names_are_checked_after_resolution_and_allowed_hosts_pass():
    net = Recorder()
    resolve = table_resolver({"intranet.example": ["10.1.2.3"], "api.example": ["93.184.216.34"]})
    guarded = GuardedTransport(httpx.MockTransport(net), EgressPolicy(resolve), pin=False)
    with pytest.raises(EgressRefusedError, match="private"):
        await get(guarded, "https://intranet.example/rest")
    with pytest.raises(EgressRefusedError, match="cannot resolve"):
        await get(guarded, "https://nowhere.example/")
    assert (await get(guarded, "https://api.example/ok")).status_code == 200
    allowed = EgressPolicy.configured(resolve, "intranet.example, 127.0.0.1")
    operator = GuardedTransport(httpx.MockTransport(net), allowed, pin=False)
    assert (await get(operator, "https://intranet.example/rest")).status_code == 200
    assert (await get(operator, "http://127.0.0.1:8080/x")).status_code == 200
    assert [r.url.host for r in net.seen] == ["api.example", "intranet.example", "127.0.0.1"]


async def test_every_redirect_is_checked_again():
    def redirect_inward(request: httpx.Request) -> httpx.Response:
        return httpx.Response(302, headers={"Location": "http://169.254.169.254/latest/meta-data"})

    net = Recorder(redirect_inward)
    resolve = table_resolver({"api.example": ["93.184.216.34"]})
    guarded = GuardedTransport(httpx.MockTransport(net), EgressPolicy(resolve), pin=False)
    with pytest.raises(EgressRefusedError, match="link-local"):
        await get(guarded, "https://api.example/start")
    assert [r.url.host for r in net.seen] == ["api.example"]


async def test_on_the_real_network_the_checked_address_is_the_one_connected_to():
    net = Recorder()
    resolve = table_resolver({"api.example": ["93.184.216.34"]})
    guarded = GuardedTransport(httpx.MockTransport(net), EgressPolicy(resolve), pin=True)
    await get(guarded, "https://api.example/v1/items")
    [sent] = net.seen
    assert sent.url.host == "93.184.216.34"  # no second resolution can point elsewhere
    assert sent.headers["host"] == "api.example"
    assert sent.extensions["sni_hostname"] == "api.example"  # TLS checks the name


def every_installed_connector(db, net: Recorder, resolve) -> Kernel:
    host = PluginHost.discover()
    settings = {"secret_key": Fernet.generate_key(), "transport": httpx.MockTransport(net)}
    settings["resolver"] = resolve
    return Kernel(plugins=host, db=db, settings=settings)


#: what a hostile user puts into every URL-like setting of a connection
INWARD = [
    "http://127.0.0.1:5432/",
    "http://localhost:8000/api/",
    "http://169.254.169.254/latest/",
    "http://[::1]:9000/",
    "http://intranet.example/",  # resolves to a private address
]


@pytest.mark.parametrize("target", INWARD)
async def test_no_installed_connector_reaches_an_inward_address(db, target):
    net = Recorder()
    resolve = table_resolver({"intranet.example": ["10.20.30.40"]})
    kernel = every_installed_connector(db, net, resolve)
    services = sorted(kernel.plugins.connectors)
    assert {"msft", "google", "jira", "clickup", "infomaniak"} <= set(services), services
    for service in services:
        adapter = kernel.plugins.connectors[service]
        url_settings = {"baseUrl", "caldavUrl", "url", "serverUrl"}
        declared = set(server_only_keys(adapter))
        settings = {key: target for key in url_settings | (declared - {"root"})}
        connection = await kernel.connections.add(
            service,
            user_id="mallory",
            grant=TokenGrant(access_token="t", refresh_token="r"),
            settings=settings,
        )
        try:
            async with kernel.connections.open(connection.id, user_id="mallory") as session:
                await adapter.browse(session, "")
        except (ConnectorError, NotImplementedError, ValueError, KeyError, TypeError):
            pass
    inward = [r.url for r in net.seen if r.url.host in {"127.0.0.1", "localhost", "::1"}]
    inward += [r.url for r in net.seen if r.url.host.startswith(("169.254", "10.", "intranet"))]
    assert inward == [], f"requests reached inward addresses: {inward}"


async def test_the_operator_s_proxy_is_used_and_still_guarded(monkeypatch):
    """With HTTPS_PROXY set the request goes through the proxy (httpx would ignore it beside
    an explicit transport), a name only the proxy can resolve passes, and a name that
    resolves to a private address is still refused before the proxy sees it."""
    from nyla.connections.egress import environment_proxies

    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.corp.example:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert set(environment_proxies()) == {"https"}
    via_proxy, direct = Recorder(), Recorder()
    names = {"intranet.example": ["10.1.2.3"]}

    async def resolve(host: str, port: int) -> list[str]:
        if host not in names:
            raise OSError("only the proxy resolves outside names")
        return names[host]

    guarded = GuardedTransport(
        httpx.MockTransport(direct),
        EgressPolicy(resolve),
        pin=True,
        proxies={"https": httpx.MockTransport(via_proxy)},
    )
    assert (await get(guarded, "https://graph.microsoft.com/v1.0/me")).status_code == 200
    with pytest.raises(EgressRefusedError, match="private"):
        await get(guarded, "https://intranet.example/secret")
    assert [r.url.host for r in via_proxy.seen] == ["graph.microsoft.com"]
    assert direct.seen == []
