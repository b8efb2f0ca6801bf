"""``kernel.connections.connect``: the probe that keeps a connection that cannot list its
root from being stored (a slow service included), and the PKCE pair (RFC 7636)."""

from __future__ import annotations

import asyncio

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import text

from nyla import hookimpl
from nyla.connections.authcode import pkce_challenge, pkce_pair
from nyla.connections.connect import ConnectionCheckError
from nyla.kernel import Kernel
from nyla.plugins import PluginHost
from nyla.sdk.connectors import BaseConnector, ConnectorSettings, ItemPage, setting

pytestmark = pytest.mark.db


class SlowSettings(ConnectorSettings):
    """How long the fake service takes to list its root."""

    delay: float = setting(0.0, kind="number", label="Delay", ge=0)


class Slow(BaseConnector):
    """A service that answers its root after ``delay`` seconds."""

    service = "slow"
    label = "Slow Service"
    auth_modes = ("none",)
    settings = SlowSettings

    async def browse(self, ctx, path: str = "", cursor: str | None = None) -> ItemPage:
        await asyncio.sleep(float(ctx.connection.settings.get("delay") or 0))
        return ItemPage()


class SlowPlugin:
    @hookimpl
    def nyla_connectors(self):
        return [Slow()]


def kernel(db) -> Kernel:
    host = PluginHost.from_plugins([SlowPlugin()], names=["slow"])
    settings = {"secret_key": Fernet.generate_key(), "connect_timeout_s": 1.5}
    return Kernel(plugins=host, db=db, settings=settings)


async def test_a_service_that_does_not_answer_in_time_is_not_stored(db):
    k = kernel(db)
    with pytest.raises(ConnectionCheckError, match=r"no answer within 1.5 s"):
        await k.connections.connect("slow", user_id="ada", settings={"delay": 30})
    async with db.session() as s:
        rows = (await s.execute(text("SELECT count(*) FROM user_connection"))).scalar_one()
    assert rows == 0
    made = await k.connections.connect("slow", user_id="ada", settings={"delay": "0.01"})
    assert made.settings == {"delay": 0.01} and made.label == "Slow Service"
    assert [c.id for c in await k.connections.list("ada")] == [made.id]


def test_the_pkce_challenge_is_rfc_7636_s256():
    # RFC 7636, appendix B
    verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    assert pkce_challenge(verifier) == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    made, challenge = pkce_pair()
    assert 43 <= len(made) <= 128 and challenge == pkce_challenge(made)
    assert pkce_pair()[0] != made
