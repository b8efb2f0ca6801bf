"""HTTP helpers provider plugins share: vendor status codes to nyla's typed errors,
``Retry-After`` parsing, transport failures, and server-sent events.

Providers that speak HTTP themselves (httpx) and SDK-based ones (whose exceptions carry the
status code and headers) both map failures through :func:`error_for_status`, so every provider
reports a 401 as :class:`~nyla.errors.ProviderAuthError` naming the variable to set, a 429 as
:class:`~nyla.errors.ProviderRateLimitError` with ``retry_after``, and so on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from nyla.errors import (
    ProviderAuthError,
    ProviderBadRequestError,
    ProviderError,
    ProviderRateLimitError,
    ProviderServerError,
    ProviderTimeoutError,
)
from nyla.http_core import error_message as error_message
from nyla.http_core import parse_retry_after as parse_retry_after


def vendor_model(provider_id: str, model: str) -> str:
    """The vendor's model name from a nyla model id (``openai:gpt-5`` -> ``gpt-5``)."""
    prefix = provider_id + ":"
    return model[len(prefix) :] if model.startswith(prefix) else model


def error_for_status(
    provider: str,
    status: int,
    body: Any = None,
    headers: Mapping[str, str] | None = None,
    *,
    env_var: str | None = None,
) -> ProviderError:
    """The typed error for a failed HTTP exchange with a vendor API."""
    detail = error_message(body) if body not in (None, b"", "") else ""
    suffix = f": {detail}" if detail else ""
    if status in (401, 403):
        hint = f"; check {env_var}" if env_var else ""
        return ProviderAuthError(
            f"{provider} rejected the credentials (HTTP {status}){suffix}{hint}",
            env_var=env_var,
            provider=provider,
            status_code=status,
        )
    if status == 429:
        retry_after = parse_retry_after(headers)
        return ProviderRateLimitError(
            f"{provider} rate limit (HTTP 429){suffix}",
            retry_after=retry_after,
            provider=provider,
            status_code=status,
        )
    if status in (408, 504):
        return ProviderTimeoutError(
            f"{provider} timed out (HTTP {status}){suffix}", provider=provider, status_code=status
        )
    if status >= 500:
        error = ProviderServerError(
            f"{provider} server error (HTTP {status}){suffix}",
            provider=provider,
            status_code=status,
        )
        # 503 / 529 "overloaded" answers may say when to come back; the retry policy reads it
        error.retry_after = parse_retry_after(headers)  # type: ignore[attr-defined]
        return error
    return ProviderBadRequestError(
        f"{provider} rejected the request (HTTP {status}){suffix}",
        provider=provider,
        status_code=status,
    )


def error_for_transport(
    provider: str, exc: Exception, *, endpoint: str | None = None
) -> ProviderError:
    """The typed error for an httpx transport failure (timeout, refused connection, ...)."""
    import httpx

    where = f" at {endpoint}" if endpoint else ""
    if isinstance(exc, httpx.TimeoutException):
        return ProviderTimeoutError(
            f"{provider}{where}: no answer in time ({exc!r})", provider=provider
        )
    return ProviderServerError(f"{provider}{where} unreachable: {exc!r}", provider=provider)


async def raise_for_response(response: Any, provider: str, *, env_var: str | None = None) -> None:
    """Raise the typed error for an httpx response that is not 2xx (reads a streamed body)."""
    if response.status_code < 400:
        return
    body = await response.aread()
    raise error_for_status(
        provider, response.status_code, body, dict(response.headers), env_var=env_var
    )


async def sse_events(response: Any) -> AsyncIterator[tuple[str | None, str]]:
    """``(event, data)`` pairs of a server-sent-events response (httpx, streamed). Multi-line
    data is joined with newlines; comments and keep-alives are skipped."""
    event: str | None = None
    data: list[str] = []
    async for line in response.aiter_lines():
        if line == "":
            if data:
                yield event, "\n".join(data)
            event, data = None, []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            event = value
        elif field == "data":
            data.append(value)
    if data:
        yield event, "\n".join(data)


def _sdk_httpx() -> Any:
    """The httpx flavour the vendor SDKs are built on (``httpx2`` in current releases of the
    openai / anthropic / mistralai SDKs, plain ``httpx`` in older ones)."""
    try:
        import httpx2

        return httpx2
    except ImportError:  # pragma: no cover - depends on the installed SDK generation
        import httpx

        return httpx


def sdk_async_client(transport: Any = None, timeout: float = 120.0) -> Any:
    """An async HTTP client of the kind the vendor SDKs take as ``http_client``, over
    ``transport`` (tests pass a mock transport; ``None`` means the real network)."""
    return _sdk_httpx().AsyncClient(transport=transport, timeout=timeout)


def sdk_exception_types() -> tuple[type[Exception], type[Exception]]:
    """``(TimeoutException, TransportError)`` of the SDKs' httpx flavour."""
    module = _sdk_httpx()
    return module.TimeoutException, module.TransportError
