"""How failures become answers: a kernel or connector error by its class (4xx, or 502-504
when a vendor or the database failed), anything else as a last-resort 500 that carries a
correlation id and nothing of the server's internals (the server log has the traceback under
the same id)."""

from __future__ import annotations

import logging
import uuid

from fastapi import Request
from fastapi.responses import JSONResponse

from nyla.sdk.connectors import ConnectorError, VendorRateLimitError
from nyla_host.connector_calls import redact_paths
from nyla_host.security_headers import SECURITY_HEADERS

log = logging.getLogger(__name__)

#: HTTP status of a kernel or connector error, by class (the first match in its MRO wins;
#: a kernel error of no listed class is the caller's 400)
ERROR_STATUS = {
    "NotFoundError": 404,
    "PermissionDeniedError": 403,
    "DatabaseUnavailableError": 503,
    "DatabaseQueryError": 503,
    "ProviderRateLimitError": 429,
    "ProviderTimeoutError": 504,
    "ProviderError": 502,
    "VendorNotFoundError": 404,
    "VendorForbiddenError": 403,
    "VendorBadRequestError": 400,
    "NotSupportedError": 400,
    "CursorExpiredError": 410,
    "ItemTooLargeError": 413,
    "VendorRateLimitError": 429,
    "VendorTimeoutError": 504,
    # the vendor refused the connection's credentials: the caller's own sign-in is fine (a
    # 401 would sign the page out), the connection needs signing in again
    "VendorAuthError": 502,
    "ConnectorError": 502,
    # billing refused the call (limit, credit, blocked): payment is what is missing
    "SpendingRefused": 402,
    "ModelAccessDenied": 403,
}


def status_of(exc: Exception) -> int:
    """The HTTP status that answers ``exc`` (see :data:`ERROR_STATUS`)."""
    names = [cls.__name__ for cls in type(exc).__mro__]
    return next((ERROR_STATUS[n] for n in names if n in ERROR_STATUS), 400)


async def nyla_error(request: Request, exc: Exception) -> JSONResponse:
    """A kernel or connector error, answered by its class; a connector's message names no
    server path (only the paths the caller sent itself)."""
    body = {"detail": f"{exc}", "error": type(exc).__name__}
    permission = getattr(exc, "permission", None)
    if isinstance(permission, str):  # a service the caller may not use (nyla.access)
        body["permission"] = permission
    headers = {}
    if isinstance(exc, ConnectorError):
        sent = [*request.query_params.values(), *map(str, request.path_params.values())]
        body = {"detail": redact_paths(str(exc), keep=sent), "error": type(exc).__name__}
        body["code"] = exc.code
        if isinstance(exc, VendorRateLimitError) and exc.retry_after:
            headers["Retry-After"] = str(max(1, round(exc.retry_after)))
    return JSONResponse(body, status_code=status_of(exc), headers=headers)


#: seconds a client is asked to wait when no database connection came free in time
BUSY_RETRY_AFTER_S = 5


async def database_busy(request: Request, exc: Exception) -> JSONResponse:
    """No database connection came free within the pool's timeout (the server is
    overloaded): a 503 the client may retry, not an internal error."""
    log.warning("%s %s: no database connection free in time", request.method, request.url.path)
    return JSONResponse(
        {
            "detail": "the server is busy: no database connection came free in time; retry",
            "error": "ServerBusy",
        },
        status_code=503,
        headers={"Retry-After": str(BUSY_RETRY_AFTER_S)},
    )


async def server_busy(request: Request, exc: Exception) -> JSONResponse:
    """Too many run starts are waiting already (:class:`nyla_host.start_gate.ServerBusy`): a
    503 the client may retry after ``Retry-After`` seconds."""
    log.warning("%s %s: %s", request.method, request.url.path, exc)
    retry = getattr(exc, "retry_after_s", BUSY_RETRY_AFTER_S)
    return JSONResponse(
        {"detail": str(exc), "error": "ServerBusy"},
        status_code=503,
        headers={"Retry-After": str(retry)},
    )


async def internal_error(request: Request, exc: Exception) -> JSONResponse:
    """The last resort: a 500 with a correlation id, the traceback in the server log under
    it. Starlette answers this outside every middleware, so the security headers are set
    here too."""
    incident = uuid.uuid4().hex
    log.error(
        "%s %s failed [%s]: %s",
        request.method,
        request.url.path,
        incident,
        type(exc).__name__,
        exc_info=exc,
    )
    return JSONResponse(
        {
            "detail": f"internal error: the server log has the details under {incident}",
            "error": "InternalError",
            "correlationId": incident,
        },
        status_code=500,
        headers={**SECURITY_HEADERS, "X-Correlation-ID": incident},
    )
