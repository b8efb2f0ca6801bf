"""``/api/automation2``: the action catalog (camelCase, behind auth) and one action run
through the kernel's executor (refusals as 4xx with a human detail)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.db


async def test_the_catalog_needs_a_user_and_is_camel_case(client, token_for):
    assert (await client.get("/api/automation2/catalog")).status_code == 401
    response = await client.get("/api/automation2/catalog", headers=await token_for())
    assert response.status_code == 200
    methods = {m["name"]: m for m in response.json()["methods"]}
    assert {"ai", "context"} <= set(methods)
    extract = {a["action"]: a for a in methods["context"]["actions"]}["extractContent"]
    assert extract["tool"] == "context_extractContent"
    assert extract["parameters"]["required"] == ["fileId"]
    assert "maxObjects" in extract["parameters"]["properties"]
    assert extract["references"] == {"fileId": {"kind": "file", "many": False}}


async def test_an_action_runs_as_the_caller(client, token_for, state):
    alice, bob = await token_for("alice"), await token_for("bob")
    upload = await client.post(
        "/api/files",
        files={"file": ("notes.md", b"# Plan\n\nShip the catalog.\n", "text/markdown")},
        headers=alice,
    )
    assert upload.status_code in (200, 201), upload.text
    file_id = upload.json()["id"]
    url = "/api/automation2/actions/context/extractContent"
    ok = await client.post(url, json={"fileId": {"type": "file", "id": file_id}}, headers=alice)
    assert ok.status_code == 200, ok.text
    assert ok.json()["success"] is True and "Ship the catalog." in ok.json()["content"]
    # bob may not read alice's file: answered as if it did not exist
    theirs = await client.post(url, json={"fileId": file_id}, headers=bob)
    assert theirs.status_code == 404 and "not found" in theirs.json()["detail"]


async def test_bad_calls_are_4xx_with_a_detail(client, token_for):
    headers = await token_for()
    missing = await client.post(
        "/api/automation2/actions/context/extractContent", json={}, headers=headers
    )
    assert missing.status_code == 422 and "fileId" in missing.json()["detail"]
    wrong = await client.post(
        "/api/automation2/actions/context/extractContent",
        json={"fileId": {"type": "featureInstance", "id": "x"}},
        headers=headers,
    )
    assert wrong.status_code == 422 and "file id" in wrong.json()["detail"]
    unknown = await client.post("/api/automation2/actions/ai/dance", json={}, headers=headers)
    assert unknown.status_code == 404 and "ai.dance" in unknown.json()["detail"]
    not_object = await client.post(
        "/api/automation2/actions/context/neutralizeData", json=[1], headers=headers
    )
    assert not_object.status_code == 422
