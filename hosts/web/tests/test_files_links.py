"""Signed download links: made for a file the caller may read, opened without a bearer
token, refused (403) when the signature is wrong, altered, made for someone else or
expired; the answer is an attachment with a safe name."""

from __future__ import annotations

from urllib.parse import parse_qs, urlencode, urlparse

import pytest
from cryptography.fernet import Fernet

pytestmark = pytest.mark.db


@pytest.fixture
def kernel(db, make_kernel, provider, memory_plugin, tmp_path):
    return make_kernel(
        provider,
        memory_plugin,
        db=db,
        settings={"data_dir": tmp_path, "secret_key": Fernet.generate_key()},
    )


async def upload(client, headers, name="report.pdf", content=b"%PDF-1.4 data") -> dict:
    response = await client.post(
        "/api/files", files={"file": (name, content, "application/pdf")}, headers=headers
    )
    assert response.status_code == 201, response.text
    return response.json()


def with_query(url: str, **changes: str) -> str:
    parsed = urlparse(url)
    query = {k: v[0] for k, v in parse_qs(parsed.query).items()}
    query.update(changes)
    return f"{parsed.path}?{urlencode(query)}"


async def test_a_link_downloads_without_a_bearer_token(state, client, token_for):
    alice = await token_for("alice")
    item = await upload(client, alice, name="../Q3 Bericht Zürich.pdf")
    made = await client.post(f"/api/files/{item['id']}/link", headers=alice)
    assert made.status_code == 200
    link = made.json()
    assert link["url"].startswith(f"/api/files/{item['id']}/download?")
    assert "nyla_" not in link["url"] and "Bearer" not in link["url"]
    assert link["expiresAt"]
    opened = await client.get(link["url"])
    assert opened.status_code == 200 and opened.content == b"%PDF-1.4 data"
    disposition = opened.headers["content-disposition"]
    assert disposition.startswith('attachment; filename="Q3 Bericht Z_rich.pdf"')
    assert "filename*=UTF-8''Q3%20Bericht%20Z%C3%BCrich.pdf" in disposition
    assert opened.headers["x-content-type-options"] == "nosniff"
    assert "no-store" in opened.headers["cache-control"]


async def test_bad_altered_foreign_and_expired_links_are_refused(state, client, token_for):
    alice, bob = await token_for("alice"), await token_for("bob")
    mine = await upload(client, alice)
    theirs = await upload(client, bob, name="bob.pdf")
    url = (await client.post(f"/api/files/{mine['id']}/link", headers=alice)).json()["url"]
    signature = parse_qs(urlparse(url).query)["signature"][0]

    forged = with_query(url, signature="0" * len(signature))
    assert (await client.get(forged)).status_code == 403
    not_hex = with_query(url, signature="é" * len(signature))  # compared as bytes, no 500
    assert (await client.get(not_hex)).status_code == 403
    as_bob = with_query(url, user="bob")  # the signature names alice
    assert (await client.get(as_bob)).status_code == 403
    later = int(parse_qs(urlparse(url).query)["expires"][0]) + 3600
    assert (await client.get(with_query(url, expires=str(later)))).status_code == 403
    other_file = url.replace(mine["id"], theirs["id"])  # alice's signature on bob's file
    assert (await client.get(other_file)).status_code == 403
    assert (await client.get(url.split("?")[0])).status_code == 422  # no signature at all

    # a link for a file the caller may not read is never made
    refused = await client.post(f"/api/files/{theirs['id']}/link", headers=alice)
    assert refused.status_code == 404

    links = state.runs.links
    real_clock = links.clock
    links.clock = lambda: real_clock() + links.ttl_s + 1  # the link's five minutes are over
    expired = await client.get(url)
    assert expired.status_code == 403 and "expired" in expired.json()["detail"]
    links.clock = real_clock
    assert (await client.get(url)).status_code == 200


async def test_a_link_stops_working_when_the_file_is_gone(state, client, token_for):
    alice = await token_for("alice")
    item = await upload(client, alice)
    url = (await client.post(f"/api/files/{item['id']}/link", headers=alice)).json()["url"]
    assert (await client.delete(f"/api/files/{item['id']}", headers=alice)).status_code == 200
    assert (await client.get(url)).status_code == 404
