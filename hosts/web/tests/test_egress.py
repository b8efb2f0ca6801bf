"""Through ``nyla serve``, a user cannot make the server send one request to its own or its
private network, via any installed connector or setting (issue 28, fault 2): settings that
point the server somewhere are a sysadmin's, undeclared ones are never read, and even a
sysadmin's inward URL is refused unless the operator allowed that host."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from cryptography.fernet import Fernet

from nyla.host import Kernel, PluginHost
from nyla.sdk.connectors import describe_connector

INWARD = [
    "http://127.0.0.1:5432/",
    "http://localhost:8000/api/",
    "http://169.254.169.254/latest/",
    "http://[::1]:9000/",
    "http://intranet.example/dav/",
]
#: every setting name a connector could read a URL from
URL_KEYS = ("baseUrl", "caldavUrl", "url", "serverUrl", "siteUrl", "authority")


class Network:
    """The outside world: records every request that reaches it."""

    def __init__(self) -> None:
        self.seen: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        return httpx.Response(200, json={})

    def inward(self) -> list[str]:
        hosts = ("127.", "localhost", "::1", "169.254.", "10.", "intranet.example")
        return [str(r.url) for r in self.seen if r.url.host.startswith(hosts)]


@pytest.fixture
def network() -> Network:
    return Network()


@pytest.fixture
def kernel(db, network, provider, tmp_path):
    """Every installed plugin (all connectors), over a recorded network whose resolver says
    intranet.example is a private address."""

    names = {"intranet.example": ["10.20.30.40"], "localhost": ["127.0.0.1", "::1"]}

    async def resolve(host: str, port: int) -> list[str]:
        return names.get(host, [])

    host = PluginHost.discover()
    host.add_plugin(type("Model", (), {"nyla_providers": lambda self: [provider]})(), "model")
    settings: dict[str, Any] = {
        "secret_key": Fernet.generate_key(),
        "transport": httpx.MockTransport(network),
        "resolver": resolve,
        "data_dir": tmp_path,
    }
    return Kernel(plugins=host, db=db, settings=settings)


@pytest.mark.parametrize("target", INWARD)
async def test_no_user_makes_the_server_call_inward(client, token_for, state, network, target):
    user = await token_for("mallory", role="user")
    admin = await token_for("root", role="sysadmin")
    services = sorted(state.kernel.plugins.connectors)
    assert {"msft", "google", "jira", "clickup", "infomaniak", "webdav"} <= set(services)
    statuses: dict[str, list[int]] = {}
    for service in services:
        adapter = state.kernel.plugins.connectors[service]
        declared = {f["key"] for f in describe_connector(adapter)["fields"] if f["serverOnly"]}
        settings = {key: target for key in (*URL_KEYS, *(declared - {"root"}))}
        for who in (user, admin):
            made = await client.post(
                "/api/connections",
                headers=who,
                json={"service": service, "label": "x", "settings": settings},
            )
            statuses.setdefault(service, []).append(made.status_code)
            if made.status_code != 201:
                continue
            conn = made.json()["id"]
            browsed = await client.get(f"/api/connections/{conn}/browse", headers=who)
            statuses[service].append(browsed.status_code)
            assert browsed.status_code < 500 or browsed.status_code in (502, 504), browsed.text
    assert network.inward() == [], f"the server called inward: {network.inward()}"
    # a user's connection with an inward URL in a declared server setting is refused outright
    for service in ("jira", "clickup", "webdav", "infomaniak"):
        assert statuses[service][0] == 403, (service, statuses[service])
