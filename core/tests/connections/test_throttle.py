"""Throttling in every vendor dialect (issue 28, fault 4): each wait is capped, not a whole
sync's; Jira's ISO reset header, ClickUp's Unix reset header and Google's 403 reasons are
honoured; a caller's deadline bounds the waiting. Time is faked: nothing here sleeps."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from nyla.connections.errors import VendorForbiddenError, VendorRateLimitError
from nyla.connections.http import HttpPolicy, VendorHttp
from nyla.connections.limits import Limiter
from nyla.connections.throttle import body_reasons, seconds_until_reset


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def make_http(handler, policy: HttpPolicy, fake: FakeTime) -> VendorHttp:
    client = httpx.AsyncClient(
        base_url="https://api.example.com", transport=httpx.MockTransport(handler)
    )
    limiter = Limiter(clock=fake.clock, sleep=fake.sleep)
    return VendorHttp("v", "acct", client=client, policy=policy, limiter=limiter, sleep=fake.sleep)


def test_reset_headers_in_every_documented_form():
    now = 1_800_000_000.0
    assert seconds_until_reset(str(int(now + 3)), now) == pytest.approx(3)  # Unix seconds
    assert seconds_until_reset(str(int((now + 7) * 1000)), now) == pytest.approx(7)  # ms
    assert seconds_until_reset("12", now) == 12  # seconds from now
    iso = datetime.fromtimestamp(now + 30, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    assert seconds_until_reset(iso, now) == pytest.approx(30)
    http_date = format_datetime(datetime.fromtimestamp(now + 60, UTC), usegmt=True)
    assert seconds_until_reset(http_date, now) == pytest.approx(60)
    assert seconds_until_reset(str(int(now - 100)), now) == 0  # in the past: go now
    for garbage in ("", "soon", "nan", "inf", "9" * 400, "2026-13-45T99:99Z"):
        assert seconds_until_reset(garbage, now) is None


def test_reasons_are_read_from_google_shaped_bodies():
    body = b'{"error": {"code": 403, "status": "PERMISSION_DENIED", "errors": [{"domain": "usageLimits", "reason": "userRateLimitExceeded"}]}}'
    assert {"userRateLimitExceeded", "PERMISSION_DENIED"} <= body_reasons(body)
    assert body_reasons(b"not json") == set()
    assert body_reasons(b"[" * 50_000) == set()


async def test_a_cap_is_per_wait_not_per_sync():
    """120 s of honoured waits in one session used to make every later throttled request
    fail at once; each request now has its own allowance."""
    fake = FakeTime()
    answers: dict[str, int] = {}

    def handler(request: httpx.Request) -> httpx.Response:
        answers[request.url.path] = answers.get(request.url.path, 0) + 1
        if answers[request.url.path] == 1:
            return httpx.Response(429, headers={"Retry-After": "50"})
        return httpx.Response(200, json={"ok": True})

    http = make_http(handler, HttpPolicy(), fake)
    for n in range(6):
        assert (await http.get_json(f"/file/{n}")) == {"ok": True}
    assert http.stats.waited_s >= 300  # six waits of ~50 s: more than any old whole-sync cap
    assert http.stats.throttled == 6


async def test_jira_429_with_only_an_iso_reset_header_waits_until_then():
    fake = FakeTime()
    calls: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(fake.now)
        if len(calls) == 1:
            reset = datetime.now(UTC) + timedelta(seconds=40)
            iso = reset.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
            return httpx.Response(429, headers={"X-RateLimit-Reset": iso})
        return httpx.Response(200, json={"issues": []})

    policy = HttpPolicy(reset_header="X-RateLimit-Reset")
    assert (await make_http(handler, policy, fake).get_json("/rest/api/3/search")) == {"issues": []}
    assert len(calls) == 2
    assert 38 <= fake.slept[0] <= 42, fake.slept


async def test_throttled_without_any_time_backs_off_long_enough():
    """Jira may answer 429 with nothing at all: nyla used to retry three times within 3 s."""
    fake = FakeTime()
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(429) if len(calls) < 6 else httpx.Response(200, json={})

    await make_http(handler, HttpPolicy(), fake).get_json("/x")
    assert len(calls) == 6
    assert sum(fake.slept) >= 15  # 1-2, 2-4, 4-8, 8-16, 16-32 s
    assert fake.slept == sorted(fake.slept)


async def test_google_403_rate_limit_reasons_are_retried_and_other_403s_are_not():
    fake = FakeTime()
    calls: list[int] = []
    throttled = {
        "error": {
            "code": 403,
            "message": "User Rate Limit Exceeded",
            "errors": [{"domain": "usageLimits", "reason": "userRateLimitExceeded"}],
        }
    }

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        if request.url.path == "/denied":
            return httpx.Response(
                403,
                json={"error": {"code": 403, "errors": [{"reason": "insufficientPermissions"}]}},
            )
        return (
            httpx.Response(403, json=throttled) if len(calls) < 3 else httpx.Response(200, json={})
        )

    policy = HttpPolicy(
        rate_limit_reasons=frozenset({"rateLimitExceeded", "userRateLimitExceeded"})
    )
    http = make_http(handler, policy, fake)
    assert await http.get_json("/gmail/v1/users/me/messages") == {}
    assert len(calls) == 3 and http.stats.throttled == 2
    calls.clear()
    with pytest.raises(VendorForbiddenError):
        await http.get_json("/denied")
    assert len(calls) == 1


async def test_clickup_reset_header_refills_the_budget_when_clickup_says():
    """A 429 with ``X-RateLimit-Remaining: 0`` used to stall a whole 60 s window of ours
    although ClickUp's own window reset 3 s later."""
    fake = FakeTime()
    calls: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(fake.now)
        headers = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(time.time()) + 3)}
        if len(calls) == 1:
            return httpx.Response(429, headers=headers)
        return httpx.Response(
            200, json={}, headers={"X-RateLimit-Remaining": "99", **{"X-RateLimit-Reset": "0"}}
        )

    policy = HttpPolicy(
        rate_requests=100,
        rate_window_s=60,
        remaining_header="X-RateLimit-Remaining",
        reset_header="X-RateLimit-Reset",
    )
    await make_http(handler, policy, fake).get_json("/api/v2/team")
    assert len(calls) == 2
    assert calls[1] - calls[0] <= 6, f"waited {calls[1] - calls[0]:.0f} s for a 3 s reset"


async def test_a_wait_longer_than_the_cap_or_the_deadline_gives_up_at_once():
    fake = FakeTime()
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(429, headers={"Retry-After": "500"})

    with pytest.raises(VendorRateLimitError, match="asks to wait 500 s"):
        await make_http(handler, HttpPolicy(max_wait_s=120), fake).get_json("/x")
    assert len(calls) == 1 and fake.slept == []

    calls.clear()
    http = make_http(
        lambda r: httpx.Response(429, headers={"Retry-After": "30"}), HttpPolicy(), fake
    )
    http.deadline = time.monotonic() + 10
    with pytest.raises(VendorRateLimitError, match="time budget"):
        await http.get_json("/y")
    assert fake.slept == []
