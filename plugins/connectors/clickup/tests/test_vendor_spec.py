"""The check every fake ClickUp exchange goes through: what ClickUp's API description allows
passes, and a fake that invents a field, nyla sending a parameter ClickUp does not know, an
undocumented status or a malformed error are each caught."""

from __future__ import annotations

import httpx
import pytest

from nyla.testing.vendor_spec import VendorSpecError, take_violations

from .fake_clickup import clickup_spec, sample

API = "https://api.clickup.com/api/v2"


def exchange(method: str, url: str, status: int, **answer) -> list[str]:
    request = httpx.Request(method, url, json=answer.pop("body", None))
    return clickup_spec().check(request, httpx.Response(status, **answer))


def test_a_documented_exchange_passes():
    assert exchange("GET", f"{API}/user", 200, json=sample("user")) == []
    assert exchange("GET", f"{API}/team", 200, json=sample("teams")) == []


def test_an_invented_field_in_an_answer_is_caught():
    user = sample("user")
    user["user"]["role"] = 1
    [problem] = exchange("GET", f"{API}/user", 200, json=user)
    assert "'role' was unexpected" in problem


def test_a_wrong_type_in_an_answer_is_caught():
    user = sample("user")
    user["user"]["id"] = "183"
    [problem] = exchange("GET", f"{API}/user", 200, json=user)
    assert "$.user.id" in problem and "not of type 'integer'" in problem


def test_an_undocumented_query_parameter_is_caught():
    url = f"{API}/team/9001/space?archived=false&deep=1"
    [problem] = exchange("GET", url, 200, json={"spaces": []})
    assert "'deep' is not documented" in problem


def test_a_query_value_of_the_wrong_type_is_caught():
    problems = exchange("GET", f"{API}/team/9001/task?page=first", 200, json={"tasks": []})
    assert any("page" in p and "documented type" in p for p in problems)


def test_an_unknown_operation_and_a_body_field_are_caught():
    [problem] = exchange("GET", f"{API}/task/86a/subtasks", 200, json={})
    assert "no such operation" in problem
    made = {"id": "9", "hist_id": "1", "date": 1}
    body = {"comment_text": "hi", "notify_all": False, "mood": "happy"}
    problems = exchange("POST", f"{API}/task/86a/comment", 200, json=made, body=body)
    assert any("request body" in p and "'mood'" in p for p in problems)


def test_statuses_and_errors_are_checked():
    [problem] = exchange("GET", f"{API}/user", 201, json=sample("user"))
    assert "status 201 is not documented" in problem
    assert exchange("GET", f"{API}/user", 429, json={"err": "Rate limit", "ECODE": "APP_002"}) == []
    problems = exchange("GET", f"{API}/user", 429, json={"error": "slow down"})
    assert any("error answer 429" in p and "'err' is a required" in p for p in problems)


def test_the_guard_raises_and_records():
    def fake(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"user": {"id": 1, "nickname": "x"}})

    client = httpx.Client(transport=httpx.MockTransport(clickup_spec().guard(fake)))
    with pytest.raises(VendorSpecError, match="nickname"):
        client.get(f"{API}/user")
    assert take_violations(), "recorded, so a connector catching the error still fails"
    outside = client.get("https://t9001.p.clickup-attachments.com/t9001/a/b.txt")
    assert outside.status_code == 200, "file hosts are not in the API description"
