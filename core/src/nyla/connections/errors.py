"""Typed errors of connectors and the vendor HTTP layer.

Adapters raise these (the HTTP layer raises most of them for them); tools turn them into
error values with a code, walkers record them per item or stop the run.
"""

from __future__ import annotations

from nyla.errors import NylaError


class ConnectorError(NylaError):
    """A connector call failed. ``retryable`` errors are retried by the HTTP layer."""

    retryable: bool = False
    code: str = "connector_error"

    def __init__(
        self, message: str, *, service: str | None = None, status_code: int | None = None
    ) -> None:
        super().__init__(message)
        self.service = service
        self.status_code = status_code


class NotSupportedError(ConnectorError):
    """The service has no such capability (e.g. ``send`` on a file store)."""

    code = "not_supported"


class VendorAuthError(ConnectorError):
    """The vendor rejected the credentials even after a fresh token."""

    code = "auth_failed"


class NeedsReconsentError(VendorAuthError):
    """The grant is gone (``invalid_grant``, revoked): the user has to connect again."""

    code = "needs_reconsent"


class VendorNotFoundError(ConnectorError):
    """The item, folder or endpoint does not exist (HTTP 404)."""

    code = "not_found"


class VendorForbiddenError(ConnectorError):
    """The account may not read or change this item (HTTP 403)."""

    code = "forbidden"


class VendorBadRequestError(ConnectorError):
    """The vendor rejected the request as invalid (HTTP 400/422)."""

    code = "bad_request"


class UnsafePathError(VendorBadRequestError):
    """An item id, path or name would leave the connection's root (``..``, an encoded or
    look-alike separator, a control character, another host): refused before any request
    (:mod:`nyla.sdk.paths`)."""

    code = "unsafe_path"


class VendorRateLimitError(ConnectorError):
    """HTTP 429 (or 503 with ``Retry-After``) beyond what the layer may wait out."""

    retryable = True
    code = "rate_limited"

    def __init__(self, message: str, *, retry_after: float | None = None, **kw) -> None:
        super().__init__(message, **kw)
        self.retry_after = retry_after


class VendorBadResponseError(ConnectorError):
    """The vendor answered something its API does not document (not JSON where JSON was
    due, XML that does not parse): nothing to retry, the service or a proxy is at fault."""

    code = "bad_response"


class VendorServerError(ConnectorError):
    """HTTP 5xx or an unreachable vendor."""

    retryable = True
    code = "vendor_unavailable"


class VendorTimeoutError(ConnectorError):
    """The vendor did not answer within the timeout."""

    retryable = True
    code = "timeout"


class CursorExpiredError(ConnectorError):
    """A sync cursor or delta token is no longer valid (HTTP 410, or the vendor's 404 for
    it): the walker starts a full re-sync."""

    code = "cursor_expired"


class ItemTooLargeError(ConnectorError):
    """A download exceeded the allowed size (checked against the listed size, and capped
    while streaming)."""

    code = "too_large"

    def __init__(self, message: str, *, size: int | None = None, limit: int, **kw) -> None:
        super().__init__(message, **kw)
        self.size = size
        self.limit = limit
