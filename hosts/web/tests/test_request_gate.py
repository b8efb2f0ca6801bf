"""The host's one middleware (nyla_host.request_gate): the body limit before a route reads
the body, with the security headers on the refusal; the request's timezone."""

from __future__ import annotations

from collections.abc import AsyncIterator

from nyla_host.security_headers import SECURITY_HEADERS

BOUNDARY = "gate-test-boundary"


def _multipart(size: int) -> bytes:
    head = (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()
    return head + b"x" * size + f"\r\n--{BOUNDARY}--\r\n".encode()


async def test_an_upload_declared_above_the_limit_is_refused_before_it_is_read(
    state, client, token_for
):
    state.settings.max_upload_bytes = 1000  # the limit is the setting + 1 MiB of form frame
    alice = await token_for("alice")
    body = _multipart(2**20 + 2000)
    headers = {**alice, "Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}
    r = await client.post("/api/files", content=body, headers=headers)
    assert r.status_code == 413
    assert "larger than" in r.json()["detail"]
    for name, value in SECURITY_HEADERS.items():
        assert r.headers[name] == value
    assert (await client.get("/api/files", headers=alice)).json()["files"] == []


async def test_a_streamed_upload_is_stopped_once_it_passes_the_limit(state, client, token_for):
    state.settings.max_upload_bytes = 1000
    alice = await token_for("alice")
    body = _multipart(2**20 + 2000)

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: sent chunked
        for start in range(0, len(body), 64 * 1024):
            yield body[start : start + 64 * 1024]

    headers = {**alice, "Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}
    r = await client.post("/api/files", content=chunks(), headers=headers)
    assert r.status_code == 413
    assert "larger than" in r.json()["detail"]
    assert (await client.get("/api/files", headers=alice)).json()["files"] == []


async def test_an_upload_under_the_limit_goes_through(state, client, token_for):
    state.settings.max_upload_bytes = 1000
    alice = await token_for("alice")
    r = await client.post("/api/files", files={"file": ("a.txt", b"x" * 900)}, headers=alice)
    assert r.status_code == 201, r.text


async def test_the_request_timezone_is_the_header_s_and_ends_with_the_request(client, token_for):
    alice = await token_for("alice")
    zurich = await client.get("/api/me", headers={**alice, "X-User-Timezone": "Europe/Zurich"})
    assert zurich.json()["timezone"] == "Europe/Zurich"
    assert zurich.json()["now"].endswith(("+01:00", "+02:00"))
    plain = await client.get("/api/me", headers=alice)
    assert plain.json()["timezone"] == "UTC"
