"""The one vendor HTTP layer every connector goes through (httpx).

:class:`VendorHttp` is bound to one connection. Each request: waits for a slot under the
account's concurrency cap and the vendor's rate budget, sends with a timeout and the
connection's current token, and then

- on 401 asks the token source for a fresh token once and sends again;
- when throttled (429, a 503 with ``Retry-After``, or the vendor's own throttling answer
  such as Google's 403 ``rateLimitExceeded``: :mod:`nyla.connections.throttle`) waits what
  ``Retry-After`` or the vendor's reset header says plus jitter, or backs off exponentially
  from ``throttle_base_s`` when it says nothing;
- on 5xx, timeouts and unreachable hosts backs off exponentially with full jitter;
- gives up with a typed error (:mod:`nyla.connections.errors`) when one wait would be longer
  than ``max_wait_s``, the waits of one request add up to more than ``max_total_wait_s``, the
  attempts are used up, or the caller's wall-clock ``deadline`` (a sync's time budget) would
  pass; at once for errors that retrying cannot fix (400, 403, 404, 410).

``stats`` counts requests, retries and seconds waited; walkers show them with the budget left
in their job's progress.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from nyla.connections.errors import (
    ConnectorError,
    CursorExpiredError,
    ItemTooLargeError,
    VendorAuthError,
    VendorBadRequestError,
    VendorBadResponseError,
    VendorForbiddenError,
    VendorNotFoundError,
    VendorRateLimitError,
    VendorServerError,
    VendorTimeoutError,
)
from nyla.connections.limits import Limiter, RateBudget
from nyla.connections.paths import check_request_url
from nyla.connections.throttle import is_throttled, seconds_until_reset
from nyla.http_core import error_message, parse_retry_after

if TYPE_CHECKING:  # httpx is imported on the first request: discovery and --help stay light
    import httpx

    from nyla.connections.on_demand import OnDemandClient

T = TypeVar("T")


class TokenSource(Protocol):
    """Where a client gets the connection's access token, and a fresh one after a 401."""

    async def token(self) -> str | None: ...

    async def refresh(self, rejected: str | None) -> str | None: ...


@dataclass
class HttpPolicy:
    """Timeouts, retries, the concurrency cap and the rate budget of one vendor.

    A connector sets its vendor's numbers (``BaseConnector.http_policy``); the defaults suit
    an API that documents none.
    """

    timeout_s: float = 30.0
    connect_timeout_s: float = 10.0
    max_attempts: int = 4
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0
    #: the longest one wait may be (a vendor asking for more: the request gives up)
    max_wait_s: float = 120.0
    #: the longest the waits of one request may add up to
    max_total_wait_s: float = 300.0
    #: attempts while throttled, and the first backoff when the vendor gives no time
    throttle_attempts: int = 8
    throttle_base_s: float = 2.0
    max_concurrency: int = 4
    rate_requests: int | None = None
    rate_window_s: float = 1.0
    slow_down_at: float = 0.8
    remaining_header: str | None = None
    #: a header with the time the vendor's window resets at (Unix seconds, ISO 8601 or an
    #: HTTP date): waited out on a 429 without ``Retry-After`` (ClickUp's and Jira's
    #: ``X-RateLimit-Reset``), and read with ``remaining_header`` to pace the budget
    reset_header: str | None = None
    #: error reasons in a 400/403 body that mean "throttled" (Google's ``rateLimitExceeded``)
    rate_limit_reasons: frozenset[str] = frozenset()
    #: ``True``: the rate budget is per connection (per token, as ClickUp counts), not shared
    #: by every connection of the vendor
    rate_per_account: bool = False
    #: ``Bearer`` (OAuth tokens), ``Basic`` (the stored token is ``user:password``) or ``""``
    #: (the token as it is: ClickUp's ``Authorization: pk_...``)
    auth_scheme: str = "Bearer"


@dataclass
class HttpStats:
    """What one client did: requests sent, retries, refreshes, seconds waited."""

    requests: int = 0
    retries: int = 0
    refreshes: int = 0
    throttled: int = 0
    waited_s: float = 0.0
    delays: list[float] = field(default_factory=list)


def error_for_response(
    service: str, response: httpx.Response, policy: HttpPolicy | None = None
) -> ConnectorError:
    """The typed error for a vendor answer that is not 2xx (its body already read)."""
    status = response.status_code
    reasons = policy.rate_limit_reasons if policy is not None else ()
    throttled = is_throttled(status, response.content, reasons)
    detail = error_message(response.content) if response.content else ""
    text = f"{service}: HTTP {status} for {response.request.method} {response.request.url.path}"
    text += f": {detail}" if detail else ""
    kw: dict[str, Any] = {"service": service, "status_code": status}
    if status == 401:
        return VendorAuthError(text, **kw)
    if status == 403 and not throttled:
        return VendorForbiddenError(text, **kw)
    if status == 404:
        return VendorNotFoundError(text, **kw)
    if status == 410:
        return CursorExpiredError(text, **kw)
    if throttled or status == 429 or (status == 503 and "retry-after" in response.headers):
        return VendorRateLimitError(
            text, retry_after=parse_retry_after(dict(response.headers)), **kw
        )
    if status in (408, 504):
        return VendorTimeoutError(text, **kw)
    if status >= 500:
        return VendorServerError(text, **kw)
    return VendorBadRequestError(text, **kw)


class VendorHttp:
    """An httpx client for one connection with auth, retries, caps and budgets.

    ``client`` carries the base URL and transport (tests pass an ``httpx.MockTransport``;
    the connection service passes an :class:`~nyla.connections.on_demand.OnDemandClient`);
    ``sleep`` and ``rng`` are injectable so tests never wait.
    """

    def __init__(
        self,
        service: str,
        account: str,
        *,
        client: httpx.AsyncClient | OnDemandClient,
        auth: TokenSource | None = None,
        policy: HttpPolicy | None = None,
        limiter: Limiter | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.service = service
        self.account = account
        self.client = client
        self.auth = auth
        self.policy = policy or HttpPolicy()
        self.limiter = limiter or Limiter(sleep=sleep)
        self.sleep = sleep
        self.rng = rng or random.Random()
        self.stats = HttpStats()
        #: ``time.monotonic()`` past which no wait may end (a sync's wall-clock budget)
        self.deadline: float | None = None

    @property
    def budget(self) -> RateBudget | None:
        """The vendor's rate budget this client draws from (``None``: none configured)."""
        p = self.policy
        key = f"{self.service}:{self.account}" if p.rate_per_account else self.service
        return self.limiter.budget(key, p.rate_requests, p.rate_window_s, p.slow_down_at)

    @property
    def budget_left(self) -> int | None:
        """Requests left in the vendor's current window (shown in job progress)."""
        budget = self.budget
        return budget.remaining if budget is not None else None

    async def request(self, method: str, url: str, **kw: Any) -> httpx.Response:
        """Send a request; returns the (read) 2xx response or raises a typed error."""
        return await self._exchange(method, url, _read, **kw)

    async def get_json(self, url: str, **kw: Any) -> Any:
        """GET ``url`` and decode the JSON answer (:class:`VendorBadResponseError` when it is
        not JSON)."""
        response = await self.request("GET", url, **kw)
        try:
            return response.json()
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
            kind = response.headers.get("content-type", "no content type")
            raise VendorBadResponseError(
                f"{self.service}: the answer to GET {response.request.url.path} is not JSON "
                f"({kind}, {len(response.content)} bytes)",
                service=self.service,
                status_code=response.status_code,
            ) from exc

    async def download(self, url: str, *, max_bytes: int | None = None, **kw: Any) -> bytes:
        """GET ``url`` as bytes, refusing (``ItemTooLargeError``) once more than ``max_bytes``
        are announced or received: the body is streamed and never held past the cap."""

        async def consume(response: httpx.Response) -> bytes:
            return await _read_capped(self.service, response, max_bytes)

        return await self._exchange("GET", url, consume, **kw)

    async def _exchange(
        self,
        method: str,
        url: str,
        consume: Callable[[httpx.Response], Awaitable[T]],
        *,
        headers: Mapping[str, str] | None = None,
        **kw: Any,
    ) -> T:
        token = await self.auth.token() if self.auth else None
        refreshed = False
        attempt = 0
        waited = 0.0
        while True:
            attempt += 1
            try:
                return await self._send_once(method, url, consume, headers, token, **kw)
            except VendorAuthError as exc:
                if self.auth is None or refreshed or exc.status_code != 401:
                    raise
                refreshed = True
                self.stats.refreshes += 1
                token = await self.auth.refresh(token)
                attempt -= 1  # a refresh is not a failed attempt
                continue
            except ConnectorError as exc:
                waited += await self._wait_or_raise(exc, attempt, waited)

    async def _send_once(
        self,
        method: str,
        url: str,
        consume: Callable[[httpx.Response], Awaitable[T]],
        headers: Mapping[str, str] | None,
        token: str | None,
        **kw: Any,
    ) -> T:
        import httpx

        merged = dict(headers or {})
        p = self.policy
        if token:
            merged["Authorization"] = _authorization(p.auth_scheme, token)
        timeout = httpx.Timeout(p.timeout_s, connect=p.connect_timeout_s)
        semaphore = self.limiter.semaphore(f"{self.service}:{self.account}", p.max_concurrency)
        request = self.client.build_request(method, url, headers=merged, timeout=timeout, **kw)
        self._confine(url, request)
        async with semaphore:
            if (budget := self.budget) is not None:
                before = budget.waited_s
                await budget.acquire()
                self.stats.waited_s += budget.waited_s - before
            self.stats.requests += 1
            try:
                response = await self.client.send(request, stream=True)
            except httpx.TimeoutException as exc:
                raise VendorTimeoutError(
                    f"{self.service}: no answer within {p.timeout_s:g} s ({type(exc).__name__})",
                    service=self.service,
                ) from exc
            except httpx.TransportError as exc:
                raise VendorServerError(
                    f"{self.service} unreachable: {exc!r}", service=self.service
                ) from exc
            try:
                self._observe(response)
                if response.status_code >= 400:
                    await response.aread()
                    error = error_for_response(self.service, response, p)
                    secrets = (token, merged.get("Authorization", "").partition(" ")[2])
                    raise self._with_reset(_without(error, secrets), response)
                return await consume(response)
            finally:
                await response.aclose()

    def _confine(self, given: str, request: httpx.Request) -> None:
        """Refuse a request whose path holds a dot segment, or that a relative URL took
        outside the base URL's path (``UnsafePathError``; connectors check ids first)."""
        raw_path = request.url.raw_path.split(b"?", 1)[0].decode("ascii", "replace")
        check_request_url(str(self.client.base_url), str(given), raw_path, service=self.service)

    def _observe(self, response: httpx.Response) -> None:
        p = self.policy
        budget = self.budget
        if not p.remaining_header or budget is None or p.remaining_header not in response.headers:
            return
        reset = response.headers.get(p.reset_header) if p.reset_header else None
        with contextlib.suppress(ValueError):
            budget.observe(int(response.headers[p.remaining_header]), seconds_until_reset(reset))

    def _with_reset(self, error: ConnectorError, response: httpx.Response) -> ConnectorError:
        """A 429 without ``Retry-After`` waits until the vendor's reset header says."""
        header = self.policy.reset_header
        if isinstance(error, VendorRateLimitError) and error.retry_after is None and header:
            error.retry_after = seconds_until_reset(response.headers.get(header))
        return error

    async def _wait_or_raise(self, error: ConnectorError, attempt: int, waited: float) -> float:
        """Sleep before the next attempt and return how long, or raise ``error`` when
        retrying is pointless or a cap would be passed (see the module docstring)."""
        p = self.policy
        if not error.retryable:
            raise error
        throttled = isinstance(error, VendorRateLimitError)
        retry_after = error.retry_after if isinstance(error, VendorRateLimitError) else None
        if attempt >= (p.throttle_attempts if throttled else p.max_attempts):
            raise self._gave_up(error, f"after {attempt} attempts")
        if retry_after is not None:
            if retry_after > p.max_wait_s:
                raise self._gave_up(
                    error, f"the vendor asks to wait {retry_after:.0f} s, over {p.max_wait_s:g} s"
                )
            delay = retry_after + self.rng.uniform(0, min(1.0, p.base_delay_s * 2))
        elif throttled:
            backoff = min(p.max_wait_s, p.throttle_base_s * 2 ** (attempt - 1))
            delay = self.rng.uniform(backoff / 2, backoff)
        else:
            delay = self.rng.uniform(0, min(p.max_delay_s, p.base_delay_s * 2 ** (attempt - 1)))
        if waited + delay > p.max_total_wait_s:
            raise self._gave_up(
                error, f"after waiting {waited:.0f} s; the cap is {p.max_total_wait_s:.0f} s"
            )
        if self.deadline is not None and time.monotonic() + delay > self.deadline:
            raise self._gave_up(error, "the time budget of this work ends first")
        if throttled:
            self.stats.throttled += 1
        self.stats.retries += 1
        self.stats.waited_s += delay
        self.stats.delays.append(delay)
        await self.sleep(delay)
        return delay

    @staticmethod
    def _gave_up(error: ConnectorError, why: str) -> ConnectorError:
        given_up = type(error)(f"{error} (gave up {why})", **_error_kw(error))
        given_up.__cause__ = error
        return given_up


def _authorization(scheme: str, token: str) -> str:
    if not scheme:
        return token
    if scheme.lower() == "basic":
        return "Basic " + base64.b64encode(token.encode("utf-8")).decode("ascii")
    return f"{scheme} {token}"


def _without(error: ConnectorError, secrets: tuple[str | None, ...]) -> ConnectorError:
    """``error`` with the request's credentials blanked out of its message: a vendor that
    echoes the token it rejected must not pass it on to a model or a log."""
    text = str(error)
    for secret in secrets:
        if secret and len(secret) >= 4 and secret in text:
            text = text.replace(secret, "<credential>")
    if text != str(error):
        error.args = (text, *error.args[1:])
    return error


def _error_kw(error: ConnectorError) -> dict[str, Any]:
    kw: dict[str, Any] = {"service": error.service, "status_code": error.status_code}
    if isinstance(error, VendorRateLimitError):
        kw["retry_after"] = error.retry_after
    return kw


async def _read(response: httpx.Response) -> httpx.Response:
    await response.aread()
    return response


async def _read_capped(service: str, response: httpx.Response, max_bytes: int | None) -> bytes:
    announced = response.headers.get("content-length")
    if max_bytes is not None and announced and announced.isdigit() and int(announced) > max_bytes:
        raise ItemTooLargeError(
            f"{service}: {announced} bytes is more than the limit of {max_bytes}",
            size=int(announced),
            limit=max_bytes,
            service=service,
        )
    parts: list[bytes] = []
    received = 0
    async for chunk in response.aiter_bytes():
        received += len(chunk)
        if max_bytes is not None and received > max_bytes:
            raise ItemTooLargeError(
                f"{service}: more than the limit of {max_bytes} bytes (stopped while reading)",
                size=None,
                limit=max_bytes,
                service=service,
            )
        parts.append(chunk)
    return b"".join(parts)
