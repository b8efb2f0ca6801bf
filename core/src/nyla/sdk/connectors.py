"""What a connector plugin needs: the adapter base class and its models, the vendor HTTP
layer, OAuth helpers and typed errors. See ``docs/connectors.md``."""

from __future__ import annotations

from nyla.connections.base import BaseConnector, BaseWalker, capabilities, sync_pages
from nyla.connections.errors import (
    ConnectorError,
    CursorExpiredError,
    ItemTooLargeError,
    NeedsReconsentError,
    NotSupportedError,
    VendorAuthError,
    VendorBadRequestError,
    VendorForbiddenError,
    VendorNotFoundError,
    VendorRateLimitError,
    VendorServerError,
    VendorTimeoutError,
)
from nyla.connections.http import HttpPolicy, HttpStats, VendorHttp, error_for_response
from nyla.connections.limits import Limiter, RateBudget
from nyla.connections.oauth import device_code_flow, grant_from_token_response, oauth2_refresh
from nyla.models.datasource import (
    CAPABILITIES,
    EXTRA_KEYS,
    ConnectionInfo,
    ConnectorAdapter,
    ConnectorContext,
    Download,
    Item,
    ItemFailure,
    ItemKind,
    ItemPage,
    OAuthConfig,
    OutgoingMessage,
    SyncPage,
    TokenGrant,
    Walker,
)

__all__ = [
    "CAPABILITIES",
    "EXTRA_KEYS",
    "BaseConnector",
    "BaseWalker",
    "ConnectionInfo",
    "ConnectorAdapter",
    "ConnectorContext",
    "ConnectorError",
    "CursorExpiredError",
    "Download",
    "HttpPolicy",
    "HttpStats",
    "Item",
    "ItemFailure",
    "ItemKind",
    "ItemPage",
    "ItemTooLargeError",
    "Limiter",
    "NeedsReconsentError",
    "NotSupportedError",
    "OAuthConfig",
    "OutgoingMessage",
    "RateBudget",
    "SyncPage",
    "TokenGrant",
    "VendorAuthError",
    "VendorBadRequestError",
    "VendorForbiddenError",
    "VendorHttp",
    "VendorNotFoundError",
    "VendorRateLimitError",
    "VendorServerError",
    "VendorTimeoutError",
    "Walker",
    "capabilities",
    "device_code_flow",
    "error_for_response",
    "grant_from_token_response",
    "oauth2_refresh",
    "sync_pages",
]
