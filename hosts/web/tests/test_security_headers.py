"""Every response — the page, its assets, the API, refusals at the door and the last-resort
500 — carries a strict Content-Security-Policy, refuses framing, sends no referrer and
forbids MIME sniffing (issue 27, fault 9: the token sits in the page's localStorage)."""

from __future__ import annotations

import httpx
import pytest

pytestmark = pytest.mark.db


def assert_strict(response: httpx.Response) -> None:
    """The response carries every security header, with a policy that allows no inline or
    foreign script, no framing and no plugin content."""
    where = f"{response.request.method} {response.request.url.path} -> {response.status_code}"
    policy = response.headers.get("content-security-policy", "")
    directives = {d.split()[0]: d.split()[1:] for d in policy.split(";") if d.strip()}
    assert directives.get("default-src") == ["'none'"], (where, policy)
    assert directives.get("script-src") == ["'self'"], (where, policy)
    assert directives.get("frame-ancestors") == ["'none'"], (where, policy)
    assert directives.get("object-src") == ["'none'"], (where, policy)
    assert directives.get("base-uri") == ["'none'"], (where, policy)
    assert "'unsafe-inline'" not in policy and "'unsafe-eval'" not in policy, (where, policy)
    assert response.headers.get("x-frame-options") == "DENY", where
    assert response.headers.get("x-content-type-options") == "nosniff", where
    assert response.headers.get("referrer-policy") == "no-referrer", where
    assert response.headers.get("cross-origin-opener-policy") == "same-origin", where


async def test_every_kind_of_response_carries_the_security_headers(app, client, token_for):
    alice = await token_for("alice")
    responses = [
        await client.get("/"),
        await client.get("/static/app.js"),
        await client.get("/static/nothing.js"),
        await client.get("/healthz"),
        await client.get("/api/me"),  # 401
        await client.get("/api/me", headers=alice),
        await client.get("/api/no-such-route", headers=alice),
        await client.get("/api/files/a%00b", headers=alice),  # the input guard's 400
        await client.post("/api/runs", json={}, headers=alice),  # 422
    ]
    assert [r.status_code for r in responses] == [200, 200, 404, 200, 401, 200, 404, 400, 422]

    @app.get("/api/test-boom")
    async def boom() -> None:
        raise RuntimeError("boom")

    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://host.test") as c:
        responses.append(await c.get("/api/test-boom"))
    assert responses[-1].status_code == 500
    for response in responses:
        assert_strict(response)


async def test_the_page_loads_only_its_own_script_and_styles(client):
    page = await client.get("/")
    html = page.text
    # nothing inline the policy would refuse: no script body, no handler or style attribute
    assert "<script>" not in html and "<style" not in html
    assert " onclick=" not in html and " style=" not in html
    assert '<script type="module" src="/static/app.js"></script>' in html  # its modules: /static
