"""The vendor HTTP layer at the wire: retries, Retry-After caps, concurrency caps, rate
budgets, capped downloads, typed errors. Time is faked: nothing here sleeps."""

from __future__ import annotations

import asyncio
import itertools

import httpx
import pytest

from nyla.connections.errors import (
    CursorExpiredError,
    ItemTooLargeError,
    VendorForbiddenError,
    VendorNotFoundError,
    VendorRateLimitError,
)
from nyla.connections.http import HttpPolicy, VendorHttp
from nyla.connections.limits import Limiter, RateBudget


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def _http(handler, policy: HttpPolicy | None = None, time: FakeTime | None = None) -> VendorHttp:
    time = time or FakeTime()
    client = httpx.AsyncClient(
        base_url="https://api.example.com", transport=httpx.MockTransport(handler)
    )
    limiter = Limiter(clock=time.clock, sleep=time.sleep)
    return VendorHttp(
        "example", "acct", client=client, policy=policy, limiter=limiter, sleep=time.sleep
    )


async def test_retry_after_beyond_the_total_wait_cap_gives_up_with_a_typed_error() -> None:
    calls = []

    def handler(request):
        calls.append(1)
        return httpx.Response(429, headers={"Retry-After": "50"}, json={"error": "slow down"})

    http = _http(handler, HttpPolicy(max_total_wait_s=120))
    with pytest.raises(VendorRateLimitError, match="gave up") as info:
        await http.request("GET", "/x")
    assert info.value.retry_after == 50
    assert len(calls) == 3  # waited 2 x ~50 s, a third wait would pass the 120 s cap
    assert 100 <= http.stats.waited_s <= 120


@pytest.mark.parametrize(
    ("status", "error"),
    [(403, VendorForbiddenError), (404, VendorNotFoundError), (410, CursorExpiredError)],
)
async def test_errors_retrying_cannot_fix_are_raised_at_once(status, error) -> None:
    calls = []

    def handler(request):
        calls.append(1)
        return httpx.Response(status, json={"error": {"message": "nope"}})

    with pytest.raises(error, match="nope"):
        await _http(handler).request("GET", "/x")
    assert len(calls) == 1


async def test_server_errors_back_off_and_recover() -> None:
    answers = [httpx.Response(503), httpx.Response(502), httpx.Response(200, json={"ok": 1})]
    http = _http(lambda r: answers.pop(0))
    assert await http.get_json("/x") == {"ok": 1}
    assert http.stats.retries == 2 and len(http.stats.delays) == 2


async def test_concurrency_is_capped_per_account() -> None:
    active, peak = 0, 0

    async def handler(request):
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.01)
        active -= 1
        return httpx.Response(200, json={})

    client = httpx.AsyncClient(
        base_url="https://api.example.com", transport=httpx.MockTransport(handler)
    )
    limiter = Limiter()
    one = VendorHttp(
        "example", "acct", client=client, policy=HttpPolicy(max_concurrency=2), limiter=limiter
    )
    two = VendorHttp(
        "example", "acct", client=client, policy=HttpPolicy(max_concurrency=2), limiter=limiter
    )
    await asyncio.gather(*(c.request("GET", "/x") for c in (one, two) for _ in range(6)))
    assert peak == 2


def test_rate_budget_slows_down_before_it_is_used_up() -> None:
    time = FakeTime()
    budget = RateBudget(10, 10.0, slow_down_at=0.5, clock=time.clock, sleep=time.sleep)

    async def burst() -> list[float]:
        sent = []
        for _ in range(10):
            await budget.acquire()
            sent.append(time.now)
        return sent

    sent = asyncio.run(burst())
    assert sent[:5] == [0.0] * 5, "the first half of the budget goes at once"
    gaps = [b - a for a, b in itertools.pairwise(sent[4:])]
    assert all(g > 0 for g in gaps), "the rest is spread out"
    assert sent[-1] < 10.0, "and still fits the window: the vendor never had to throttle"
    assert budget.remaining == 0
    asyncio.run(budget.acquire())
    assert time.now >= 10.0, "a request past the budget waits for the window"


def test_vendor_remaining_header_lowers_the_budget() -> None:
    time = FakeTime()
    budget = RateBudget(100, 60.0, clock=time.clock, sleep=time.sleep)
    budget.observe(3)
    assert budget.remaining == 3


async def test_downloads_are_capped_by_announced_and_streamed_size() -> None:
    def announced(request):
        return httpx.Response(200, content=b"x" * 100)

    with pytest.raises(ItemTooLargeError) as info:
        await _http(announced).download("/f", max_bytes=10)
    assert info.value.size == 100

    async def stream():
        for _ in range(10):
            yield b"y" * 10

    def streamed(request):
        return httpx.Response(200, content=stream())  # no content-length

    with pytest.raises(ItemTooLargeError, match="while reading"):
        await _http(streamed).download("/f", max_bytes=35)
    assert await _http(streamed).download("/f", max_bytes=100) == b"y" * 100


async def test_a_429_without_retry_after_waits_until_the_reset_header() -> None:
    import time as wall

    answers = iter([429, 200])
    seen_auth = []

    def handler(request):
        seen_auth.append(request.headers.get("authorization"))
        status = next(answers)
        reset = {"X-RateLimit-Reset": str(int(wall.time()) + 42)} if status == 429 else {}
        return httpx.Response(status, headers=reset, json={"err": "Rate limit reached"})

    time = FakeTime()
    policy = HttpPolicy(reset_header="X-RateLimit-Reset", auth_scheme="")
    http = _http(handler, policy, time)

    class Token:
        async def token(self) -> str:
            return "pk_1_RAW"

        async def refresh(self, rejected):
            return None

    http.auth = Token()
    await http.request("GET", "/x")
    assert any(40 <= d <= 43.5 for d in time.slept), time.slept
    assert seen_auth == ["pk_1_RAW", "pk_1_RAW"], "an empty scheme sends the token as it is"


def test_rate_budget_per_account_is_not_shared_by_other_accounts() -> None:
    limiter = Limiter()
    policy = HttpPolicy(rate_requests=100, rate_window_s=60, rate_per_account=True)
    client = httpx.AsyncClient(transport=httpx.MockTransport(lambda r: httpx.Response(200)))
    one = VendorHttp("clickup", "a", client=client, policy=policy, limiter=limiter)
    two = VendorHttp("clickup", "b", client=client, policy=policy, limiter=limiter)
    assert one.budget is not two.budget and one.budget is limiter.budget("clickup:a", 100, 60, 0.8)
    shared = HttpPolicy(rate_requests=100, rate_window_s=60)
    three = VendorHttp("clickup", "c", client=client, policy=shared, limiter=limiter)
    four = VendorHttp("clickup", "d", client=client, policy=shared, limiter=limiter)
    assert three.budget is four.budget


async def test_an_answer_that_is_not_json_is_a_typed_error_not_a_crash() -> None:
    """A proxy's HTML login page (or any non-JSON answer) where the API documents JSON."""
    from nyla.connections.errors import VendorBadResponseError

    page = b"<html><body>Please sign in to the corporate proxy</body></html>"
    http = _http(lambda r: httpx.Response(200, content=page, headers={"content-type": "text/html"}))
    with pytest.raises(VendorBadResponseError, match="not JSON") as info:
        await http.get_json("/items")
    assert info.value.code == "bad_response" and not info.value.retryable
