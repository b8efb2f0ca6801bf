"""nyla.sdk: the stable surface for plugin authors.

A plugin imports only ``nyla.sdk`` (and ``nyla.testing`` in its tests) and its own third-party
SDKs, never the top-level ``nyla`` package (a library user's face) nor ``nyla.host`` (a host
app's); ``make lint`` enforces that. Everything here keeps its name and signature within a
minor release of ``nyla``, so a plugin pins ``nyla~=X.Y``; everything below ``nyla`` that is
not re-exported here may change at any time. ``docs/writing-a-plugin.md`` lists every name.

What is here:

- hook markers: :data:`hookimpl`
- provider base classes: :class:`ProviderBase`, :class:`OpenAICompatibleProvider` (plus the
  chat-completions converters for vendors that speak a variant of it)
- HTTP helpers: vendor status codes to typed errors, ``Retry-After``, server-sent events, the
  HTTP client the vendor SDKs take, :class:`RetryPolicy`
- configuration lookup: :func:`config_value`, :func:`missing_reason`
- offline token counting: :func:`count_tokens` and friends
- the typed models (including what ``ctx.services.ai.call`` answers: :class:`AiCallResponse`
  with its fallback notes, invalid tool arguments and neutralization report) and the errors
  plugins raise or catch
- what a tool may call of the kernel, ``ToolContext.services``: :class:`ToolServices` with
  :class:`ToolFiles`, :class:`ToolConnections` (opening a :class:`ConnectionSession`),
  :class:`ToolAi`, :class:`ToolKnowledge` and :class:`ToolFeatures`; outside a run each
  raises :class:`ServiceUnavailableError`
- :class:`ModelQuery`: which models may answer a call (the model selector's one argument)
- text helpers: :func:`clean_text`, :func:`has_unstorable_chars`, :func:`download_name` (the
  base name a file is offered for download under)
- path helpers (:mod:`nyla.sdk.paths`): :func:`safe_segment`, :func:`confine_path`,
  :func:`url_segment`, :func:`url_path`, :func:`confine_url` and :class:`UnsafePathError`,
  so no id or name a model passed can take a request outside its root
- :mod:`nyla.sdk.connectors`: the connector protocol, the normalised item model, the vendor
  HTTP layer and its typed errors (imported on its own: ``from nyla.sdk.connectors import ...``)
- toolboxes over connectors (:mod:`nyla.sdk.toolboxes`): :func:`with_connection` (a handler on
  the run user's connection, every connector error as a structured failure),
  :class:`ConnectionArgs`, :func:`write_barrier`, :func:`save_download`; and
  :class:`TaskToolbox` (:mod:`nyla.sdk.task_toolbox`), the search / read / write tools every
  task service shares
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from nyla.ai.retry import RetryPolicy
from nyla.ai.tokens import (
    count_message_tokens,
    count_text_tokens,
    count_text_tokens_once,
    count_tokens,
    count_tool_tokens,
)
from nyla.config import config_path, config_value, missing_reason
from nyla.config import reload as reload_config
from nyla.connections.errors import UnsafePathError
from nyla.errors import (
    BudgetExceeded,
    ConfigurationError,
    FileAccessError,
    ModelNotAvailableError,
    NeutralizationError,
    NylaError,
    PluginError,
    ProviderAuthError,
    ProviderBadRequestError,
    ProviderError,
    ProviderRateLimitError,
    ProviderServerError,
    ProviderTimeoutError,
    UnsupportedCapabilityError,
)
from nyla.files.names import download_name
from nyla.hookspecs import hookimpl
from nyla.models.agent import AgentConfig, RunContext
from nyla.models.ai import (
    TEXT_OPERATIONS,
    AiCallRequest,
    AiCallResponse,
    ChatRequest,
    ChatResponse,
    EmbeddingResponse,
    FallbackNote,
    ImagePart,
    InvalidToolArguments,
    Message,
    ModelCapabilities,
    ModelSpec,
    NeutralizationReport,
    OperationType,
    Provider,
    RerankResponse,
    RerankScore,
    Role,
    StreamDelta,
    TextPart,
    ToolCall,
    ToolDefinition,
    Usage,
    WebSearchHit,
)
from nyla.models.base import WireModel
from nyla.models.chat_options import ResponseFormat, ToolChoice
from nyla.models.feature import (
    BenchmarkQuestion,
    Feature,
    FeatureDataProvider,
    FeatureField,
    FeatureTable,
)
from nyla.models.knowledge import SearchFilters, SearchHit, SearchQuery, SearchResult
from nyla.models.model_query import ModelQuery
from nyla.models.neutralize import Finding, Neutralizer
from nyla.models.ontology import (
    CanonicalPattern,
    Cardinality,
    Constraint,
    ConstraintKind,
    Entity,
    EntityFilter,
    OntologyDescriptor,
    PatternStep,
    Relation,
)
from nyla.models.settings_sections import SettingsScope, SettingsSection
from nyla.models.speech import SpeechAudio, Transcript
from nyla.models.tool_services import (
    ConnectionSession,
    DataAgentAnswer,
    DataSourceEntry,
    PlaceholderSession,
    ServiceUnavailableError,
    ToolAi,
    ToolConnections,
    ToolFeatures,
    ToolFiles,
    ToolKnowledge,
    ToolServices,
    ToolSpeech,
    WorkflowMessages,
)
from nyla.models.tools import (
    Tool,
    Toolbox,
    ToolboxRequests,
    ToolContext,
    ToolErrorDetails,
    ToolResult,
)
from nyla.sdk.http import (
    error_for_status,
    error_for_transport,
    error_message,
    parse_retry_after,
    raise_for_response,
    sdk_async_client,
    sdk_exception_types,
    sse_events,
    vendor_model,
)
from nyla.sdk.openai_compat import (
    OpenAICompatibleProvider,
    StreamAssembler,
    answer_options,
    parse_completion,
    parse_usage,
    to_content,
    to_messages,
    to_response_format,
    to_tool_choice,
    to_tools,
)
from nyla.sdk.paths import confine_path, confine_url, safe_segment, url_path, url_segment
from nyla.sdk.providers import ProviderBase
from nyla.text import clean_text, has_unstorable_chars

if TYPE_CHECKING:
    from nyla.connections.crypto import TokenCipher as TokenCipher
    from nyla.sdk.task_toolbox import TaskArg as TaskArg
    from nyla.sdk.task_toolbox import TaskReadArgs as TaskReadArgs
    from nyla.sdk.task_toolbox import TaskSearchArgs as TaskSearchArgs
    from nyla.sdk.task_toolbox import TaskToolbox as TaskToolbox
    from nyla.sdk.task_toolbox import TaskWriteArgs as TaskWriteArgs
    from nyla.sdk.toolboxes import ConnectionArgs as ConnectionArgs
    from nyla.sdk.toolboxes import connection_field as connection_field
    from nyla.sdk.toolboxes import has_capability as has_capability
    from nyla.sdk.toolboxes import save_download as save_download
    from nyla.sdk.toolboxes import switched_off as switched_off
    from nyla.sdk.toolboxes import with_connection as with_connection
    from nyla.sdk.toolboxes import write_barrier as write_barrier

#: names loaded on first use: their modules build on the connector layer, which imports
#: ``nyla.sdk.http`` (and so this package) itself, so importing them here would be circular
_LAZY = {
    **dict.fromkeys(
        ("TaskArg", "TaskReadArgs", "TaskSearchArgs", "TaskToolbox", "TaskWriteArgs"),
        "nyla.sdk.task_toolbox",
    ),
    **dict.fromkeys(
        (
            "ConnectionArgs",
            "connection_field",
            "has_capability",
            "save_download",
            "switched_off",
            "with_connection",
            "write_barrier",
        ),
        "nyla.sdk.toolboxes",
    ),
    "TokenCipher": "nyla.connections.crypto",
}

__all__ = [
    "TEXT_OPERATIONS",
    "AgentConfig",
    "AiCallRequest",
    "AiCallResponse",
    "BenchmarkQuestion",
    "BudgetExceeded",
    "CanonicalPattern",
    "Cardinality",
    "ChatRequest",
    "ChatResponse",
    "ConfigurationError",
    "ConnectionArgs",
    "ConnectionSession",
    "Constraint",
    "ConstraintKind",
    "DataAgentAnswer",
    "DataSourceEntry",
    "EmbeddingResponse",
    "Entity",
    "EntityFilter",
    "FallbackNote",
    "Feature",
    "FeatureDataProvider",
    "FeatureField",
    "FeatureTable",
    "FileAccessError",
    "Finding",
    "ImagePart",
    "InvalidToolArguments",
    "Message",
    "ModelCapabilities",
    "ModelNotAvailableError",
    "ModelQuery",
    "ModelSpec",
    "NeutralizationError",
    "NeutralizationReport",
    "Neutralizer",
    "NylaError",
    "OntologyDescriptor",
    "OpenAICompatibleProvider",
    "OperationType",
    "PatternStep",
    "PlaceholderSession",
    "PluginError",
    "Provider",
    "ProviderAuthError",
    "ProviderBadRequestError",
    "ProviderBase",
    "ProviderError",
    "ProviderRateLimitError",
    "ProviderServerError",
    "ProviderTimeoutError",
    "Relation",
    "RerankResponse",
    "RerankScore",
    "ResponseFormat",
    "RetryPolicy",
    "Role",
    "RunContext",
    "SearchFilters",
    "SearchHit",
    "SearchQuery",
    "SearchResult",
    "ServiceUnavailableError",
    "SettingsScope",
    "SettingsSection",
    "SpeechAudio",
    "StreamAssembler",
    "StreamDelta",
    "TaskArg",
    "TaskReadArgs",
    "TaskSearchArgs",
    "TaskToolbox",
    "TaskWriteArgs",
    "TextPart",
    "TokenCipher",
    "Tool",
    "ToolAi",
    "ToolCall",
    "ToolChoice",
    "ToolConnections",
    "ToolContext",
    "ToolDefinition",
    "ToolErrorDetails",
    "ToolFeatures",
    "ToolFiles",
    "ToolKnowledge",
    "ToolResult",
    "ToolServices",
    "ToolSpeech",
    "Toolbox",
    "ToolboxRequests",
    "Transcript",
    "UnsafePathError",
    "UnsupportedCapabilityError",
    "Usage",
    "WebSearchHit",
    "WireModel",
    "WorkflowMessages",
    "answer_options",
    "clean_text",
    "config_path",
    "config_value",
    "confine_path",
    "confine_url",
    "connection_field",
    "count_message_tokens",
    "count_text_tokens",
    "count_text_tokens_once",
    "count_tokens",
    "count_tool_tokens",
    "download_name",
    "error_for_status",
    "error_for_transport",
    "error_message",
    "has_capability",
    "has_unstorable_chars",
    "hookimpl",
    "missing_reason",
    "parse_completion",
    "parse_retry_after",
    "parse_usage",
    "raise_for_response",
    "reload_config",
    "safe_segment",
    "save_download",
    "sdk_async_client",
    "sdk_exception_types",
    "sse_events",
    "switched_off",
    "to_content",
    "to_messages",
    "to_response_format",
    "to_tool_choice",
    "to_tools",
    "url_path",
    "url_segment",
    "vendor_model",
    "with_connection",
    "write_barrier",
]


def __getattr__(name: str) -> Any:
    """The names of :data:`_LAZY`, imported on first use."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
