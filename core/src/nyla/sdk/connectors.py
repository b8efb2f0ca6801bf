"""What a connector plugin needs: the adapter base class and its models, the vendor HTTP
layer, OAuth helpers and typed errors. See ``docs/connectors.md``."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from nyla.connections.base import BaseConnector, BaseWalker, capabilities, sync_pages
from nyla.connections.errors import (
    ConnectorError,
    CursorExpiredError,
    ItemTooLargeError,
    NeedsReconsentError,
    NotSupportedError,
    UnsafePathError,
    VendorAuthError,
    VendorBadRequestError,
    VendorBadResponseError,
    VendorForbiddenError,
    VendorNotFoundError,
    VendorRateLimitError,
    VendorServerError,
    VendorTimeoutError,
)
from nyla.connections.http import HttpPolicy, HttpStats, VendorHttp, error_for_response
from nyla.connections.inline import inline_line, inline_listing
from nyla.connections.limits import Limiter, RateBudget
from nyla.connections.mail import (
    MAIL_CAPABILITIES,
    MailConnector,
    MailMessage,
    MailQuery,
    mail_capabilities,
)
from nyla.connections.settings import ConnectorSettings, SettingKind, setting
from nyla.connections.settings import describe as describe_connector
from nyla.connections.tasks import (
    TASK_CAPABILITIES,
    TaskChange,
    TaskComment,
    TaskConnector,
    TaskDetail,
    TaskQuery,
    task_capabilities,
)
from nyla.connections.tooling import NoConnection, connector_failure, pick_connection
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
    Unlisted,
    Walker,
)
from nyla.sdk.checkpoints import Checkpoint, DeltaCheckpoint, SinceCheckpoint, Stamp
from nyla.sdk.paging import odata_pages, token_pages
from nyla.sdk.paths import (
    check_request_url,
    confine_path,
    confine_url,
    safe_segment,
    url_path,
    url_segment,
)

if TYPE_CHECKING:
    from nyla.connections.oauth import device_code_flow, grant_from_token_response, oauth2_refresh

__all__ = [
    "CAPABILITIES",
    "EXTRA_KEYS",
    "MAIL_CAPABILITIES",
    "TASK_CAPABILITIES",
    "BaseConnector",
    "BaseWalker",
    "Checkpoint",
    "ConnectionInfo",
    "ConnectorAdapter",
    "ConnectorContext",
    "ConnectorError",
    "ConnectorSettings",
    "CursorExpiredError",
    "DeltaCheckpoint",
    "Download",
    "HttpPolicy",
    "HttpStats",
    "Item",
    "ItemFailure",
    "ItemKind",
    "ItemPage",
    "ItemTooLargeError",
    "Limiter",
    "MailConnector",
    "MailMessage",
    "MailQuery",
    "NeedsReconsentError",
    "NoConnection",
    "NotSupportedError",
    "OAuthConfig",
    "OutgoingMessage",
    "RateBudget",
    "SettingKind",
    "SinceCheckpoint",
    "Stamp",
    "SyncPage",
    "TaskChange",
    "TaskComment",
    "TaskConnector",
    "TaskDetail",
    "TaskQuery",
    "TokenGrant",
    "Unlisted",
    "UnsafePathError",
    "VendorAuthError",
    "VendorBadRequestError",
    "VendorBadResponseError",
    "VendorForbiddenError",
    "VendorHttp",
    "VendorNotFoundError",
    "VendorRateLimitError",
    "VendorServerError",
    "VendorTimeoutError",
    "Walker",
    "capabilities",
    "check_request_url",
    "confine_path",
    "confine_url",
    "connector_failure",
    "describe_connector",
    "device_code_flow",
    "error_for_response",
    "grant_from_token_response",
    "inline_line",
    "inline_listing",
    "mail_capabilities",
    "oauth2_refresh",
    "odata_pages",
    "pick_connection",
    "safe_segment",
    "setting",
    "sync_pages",
    "task_capabilities",
    "token_pages",
    "url_path",
    "url_segment",
]

#: names whose modules reach the database layer: imported on first use, so that loading a
#: connector plugin (``nyla plugins list``) stays free of SQLAlchemy
_LAZY = {
    "device_code_flow": "nyla.connections.oauth",
    "oauth2_refresh": "nyla.connections.oauth",
    "grant_from_token_response": "nyla.connections.oauth",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
