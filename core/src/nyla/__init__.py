"""nyla: a plugin-driven AI agent framework.

The face for a user of the library: the kernel object (``Kernel``: ``kernel.agent.run``,
``kernel.ai.call``, ``kernel.knowledge``), the models a user passes and gets back (run
configuration and context, agent events, messages and model calls, tools, search results,
the plugin contracts for an in-process plugin), the hook markers and the errors to catch.

Two other faces: ``nyla.sdk`` is everything a plugin may import, ``nyla.host`` what only a
host app holds (the plugin host, the database and its metadata, the services and stores, the
agent loop entry, the knowledge store's lookups, the settings). A host-only name asked of
``nyla`` says where it went. Names are imported lazily so that ``import nyla`` (and ``nyla
--help``) stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from nyla.hookspecs import hookimpl, hookspec

# What a type checker sees; at run time the names load lazily (__getattr__ below).
# isort: off
if TYPE_CHECKING:
    from nyla.errors import (
        BudgetExceeded as BudgetExceeded,
        ConfigurationError as ConfigurationError,
        DatabaseQueryError as DatabaseQueryError,
        DatabaseUnavailableError as DatabaseUnavailableError,
        FileAccessError as FileAccessError,
        FolderNotEmptyError as FolderNotEmptyError,
        ModelNotAvailableError as ModelNotAvailableError,
        NeutralizationError as NeutralizationError,
        NylaError as NylaError,
        PluginError as PluginError,
        ProviderAuthError as ProviderAuthError,
        ProviderBadRequestError as ProviderBadRequestError,
        ProviderError as ProviderError,
        ProviderRateLimitError as ProviderRateLimitError,
        ProviderServerError as ProviderServerError,
        ProviderTimeoutError as ProviderTimeoutError,
        UnsupportedCapabilityError as UnsupportedCapabilityError,
    )
    from nyla.kernel import Kernel as Kernel
    from nyla.knowledge.consent import (
        NotFoundError as NotFoundError,
        PermissionDeniedError as PermissionDeniedError,
    )
    from nyla.knowledge.limits import SettingsValidationError as SettingsValidationError
    from nyla.knowledge.precomputed import PrecomputedEmbeddings as PrecomputedEmbeddings
    from nyla.models.agent import (
        AgentConfig as AgentConfig,
        AgentEvent as AgentEvent,
        AgentStatus as AgentStatus,
        AgentTrace as AgentTrace,
        EventType as EventType,
        RunContext as RunContext,
        ToolCallLog as ToolCallLog,
    )
    from nyla.models.ai import (
        TEXT_OPERATIONS as TEXT_OPERATIONS,
        AiCallRequest as AiCallRequest,
        AiCallResponse as AiCallResponse,
        ChatRequest as ChatRequest,
        ChatResponse as ChatResponse,
        EmbeddingResponse as EmbeddingResponse,
        FallbackNote as FallbackNote,
        ImagePart as ImagePart,
        InvalidToolArguments as InvalidToolArguments,
        Message as Message,
        ModelCapabilities as ModelCapabilities,
        ModelSpec as ModelSpec,
        NeutralizationReport as NeutralizationReport,
        OperationType as OperationType,
        Provider as Provider,
        Role as Role,
        StreamDelta as StreamDelta,
        TextPart as TextPart,
        ToolCall as ToolCall,
        ToolDefinition as ToolDefinition,
        Usage as Usage,
        WebSearchHit as WebSearchHit,
    )
    from nyla.models.chat_options import (
        ResponseFormat as ResponseFormat,
        ToolChoice as ToolChoice,
    )
    from nyla.models.datasource import (
        ConnectionInfo as ConnectionInfo,
        ConnectorAdapter as ConnectorAdapter,
        DownloadedFile as DownloadedFile,
        JobProgress as JobProgress,
        WalkResult as WalkResult,
        Walker as Walker,
    )
    from nyla.models.feature import (
        BenchmarkQuestion as BenchmarkQuestion,
        Feature as Feature,
        FeatureDataProvider as FeatureDataProvider,
        FeatureField as FeatureField,
        FeatureTable as FeatureTable,
    )
    from nyla.models.files import Scope as Scope
    from nyla.models.knowledge import (
        IndexResult as IndexResult,
        SearchFilters as SearchFilters,
        SearchHit as SearchHit,
        SearchQuery as SearchQuery,
        SearchResult as SearchResult,
    )
    from nyla.models.neutralize import Finding as Finding, Neutralizer as Neutralizer
    from nyla.models.ontology import (
        CanonicalPattern as CanonicalPattern,
        Cardinality as Cardinality,
        Constraint as Constraint,
        ConstraintKind as ConstraintKind,
        Entity as Entity,
        EntityFilter as EntityFilter,
        OntologyDescriptor as OntologyDescriptor,
        PatternStep as PatternStep,
        Relation as Relation,
    )
    from nyla.models.tools import (
        Tool as Tool,
        ToolContext as ToolContext,
        ToolErrorDetails as ToolErrorDetails,
        ToolResult as ToolResult,
        Toolbox as Toolbox,
    )
# isort: on

from nyla.version import __version__ as __version__

_EXPORTS: dict[str, str] = {
    # the kernel object (kernel.agent.run, kernel.ai.call, kernel.knowledge ...)
    "Kernel": "nyla.kernel",
    # ai
    "OperationType": "nyla.models.ai",
    "TEXT_OPERATIONS": "nyla.models.ai",
    "Role": "nyla.models.ai",
    "Message": "nyla.models.ai",
    "TextPart": "nyla.models.ai",
    "ImagePart": "nyla.models.ai",
    "ToolCall": "nyla.models.ai",
    "ToolDefinition": "nyla.models.ai",
    "Usage": "nyla.models.ai",
    "ModelCapabilities": "nyla.models.ai",
    "ModelSpec": "nyla.models.ai",
    "ChatRequest": "nyla.models.ai",
    "ChatResponse": "nyla.models.ai",
    "ToolChoice": "nyla.models.chat_options",
    "ResponseFormat": "nyla.models.chat_options",
    "StreamDelta": "nyla.models.ai",
    "EmbeddingResponse": "nyla.models.ai",
    "WebSearchHit": "nyla.models.ai",
    "Provider": "nyla.models.ai",
    "AiCallRequest": "nyla.models.ai",
    "AiCallResponse": "nyla.models.ai",
    "FallbackNote": "nyla.models.ai",
    "InvalidToolArguments": "nyla.models.ai",
    "NeutralizationReport": "nyla.models.ai",
    # agent
    "RunContext": "nyla.models.agent",
    "AgentConfig": "nyla.models.agent",
    "AgentStatus": "nyla.models.agent",
    "AgentEvent": "nyla.models.agent",
    "EventType": "nyla.models.agent",
    "AgentTrace": "nyla.models.agent",
    "ToolCallLog": "nyla.models.agent",
    # tools
    "Tool": "nyla.models.tools",
    "Toolbox": "nyla.models.tools",
    "ToolResult": "nyla.models.tools",
    "ToolErrorDetails": "nyla.models.tools",
    "ToolContext": "nyla.models.tools",
    # data sources
    "ConnectorAdapter": "nyla.models.datasource",
    "ConnectionInfo": "nyla.models.datasource",
    "DownloadedFile": "nyla.models.datasource",
    "JobProgress": "nyla.models.datasource",
    "Walker": "nyla.models.datasource",
    "WalkResult": "nyla.models.datasource",
    # features and ontology
    "Feature": "nyla.models.feature",
    "FeatureTable": "nyla.models.feature",
    "FeatureField": "nyla.models.feature",
    "FeatureDataProvider": "nyla.models.feature",
    "BenchmarkQuestion": "nyla.models.feature",
    "OntologyDescriptor": "nyla.models.ontology",
    "Entity": "nyla.models.ontology",
    "EntityFilter": "nyla.models.ontology",
    "Relation": "nyla.models.ontology",
    "Cardinality": "nyla.models.ontology",
    "Constraint": "nyla.models.ontology",
    "ConstraintKind": "nyla.models.ontology",
    "CanonicalPattern": "nyla.models.ontology",
    "PatternStep": "nyla.models.ontology",
    # knowledge store: what a user passes (vectors computed elsewhere) and gets back
    "PrecomputedEmbeddings": "nyla.knowledge.precomputed",
    "IndexResult": "nyla.models.knowledge",
    "SearchFilters": "nyla.models.knowledge",
    "SearchHit": "nyla.models.knowledge",
    "SearchQuery": "nyla.models.knowledge",
    "SearchResult": "nyla.models.knowledge",
    "Scope": "nyla.models.files",
    "NotFoundError": "nyla.knowledge.consent",
    "PermissionDeniedError": "nyla.knowledge.consent",
    "SettingsValidationError": "nyla.knowledge.limits",
    # neutralization
    "Neutralizer": "nyla.models.neutralize",
    "Finding": "nyla.models.neutralize",
    # errors
    "NylaError": "nyla.errors",
    "PluginError": "nyla.errors",
    "ConfigurationError": "nyla.errors",
    "DatabaseUnavailableError": "nyla.errors",
    "DatabaseQueryError": "nyla.errors",
    "BudgetExceeded": "nyla.errors",
    "FileAccessError": "nyla.errors",
    "FolderNotEmptyError": "nyla.errors",
    "NeutralizationError": "nyla.errors",
    "ModelNotAvailableError": "nyla.errors",
    "UnsupportedCapabilityError": "nyla.errors",
    "ProviderError": "nyla.errors",
    "ProviderAuthError": "nyla.errors",
    "ProviderBadRequestError": "nyla.errors",
    "ProviderRateLimitError": "nyla.errors",
    "ProviderServerError": "nyla.errors",
    "ProviderTimeoutError": "nyla.errors",
}

__all__ = ["__version__", "hookimpl", "hookspec", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        # not `from nyla import host`: that asks this function for "host" first, forever
        host = importlib.import_module("nyla.host")
        where = " (host-only: import it from nyla.host)" if name in host.__all__ else ""
        raise AttributeError(f"module 'nyla' has no attribute {name!r}{where}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
