"""nyla: a plugin-driven AI agent framework.

The public API for plugin authors and hosts. Names are imported lazily so that
``import nyla`` (and ``nyla --help``) stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from nyla.hookspecs import hookimpl, hookspec

# What a type checker sees; at run time the names load lazily (__getattr__ below).
# isort: off
if TYPE_CHECKING:
    from nyla.agent.loop import run_agent_loop as run_agent_loop
    from nyla.agent.spec import RunSpec as RunSpec
    from nyla.agent.runtime import AgentRuntime as AgentRuntime
    from nyla.config import config_value as config_value
    from nyla.ai.neutralize import NeutralizationSession as NeutralizationSession
    from nyla.ai.service import AiService as AiService
    from nyla.connections.service import ConnectionService as ConnectionService
    from nyla.db import Base as Base, Database as Database, metadata as metadata
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
    from nyla.features.data_agent import (
        FeatureAgentResult as FeatureAgentResult,
        run_feature_data_agent as run_feature_data_agent,
    )
    from nyla.features.ontology_compiler import (
        compile_ontology_to_prompt as compile_ontology_to_prompt,
    )
    from nyla.features.validator import QueryValidator as QueryValidator
    from nyla.files.bridge import (
        attach_file_as_chat_document as attach_file_as_chat_document,
        format_tool_file_result as format_tool_file_result,
    )
    from nyla.files.docrefs import coerce_document_reference_list as coerce_document_reference_list
    from nyla.files.store import FileStore as FileStore
    from nyla.jobs.store import JobStore as JobStore
    from nyla.identity import default_user as default_user
    from nyla.kernel import Kernel as Kernel
    from nyla.knowledge.consent import (
        NotFoundError as NotFoundError,
        PermissionDeniedError as PermissionDeniedError,
    )
    from nyla.knowledge.limits import SettingsValidationError as SettingsValidationError
    from nyla.knowledge.precomputed import PrecomputedEmbeddings as PrecomputedEmbeddings
    from nyla.knowledge.service import KnowledgeService as KnowledgeService
    from nyla.knowledge.sources import (
        DataSourceView as DataSourceView,
        get_data_source as get_data_source,
        list_data_sources as list_data_sources,
    )
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
    from nyla.plugins import PluginHost as PluginHost, PluginRecord as PluginRecord
    from nyla.text import clean_text as clean_text, has_unstorable_chars as has_unstorable_chars
# isort: on

from nyla.version import __version__ as __version__

_EXPORTS: dict[str, str] = {
    # kernel
    "Kernel": "nyla.kernel",
    "PluginHost": "nyla.plugins",
    "PluginRecord": "nyla.plugins",
    "ConnectionService": "nyla.connections.service",
    "Database": "nyla.db",
    "Base": "nyla.db",
    "metadata": "nyla.db",
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
    "AiService": "nyla.ai.service",
    "NeutralizationSession": "nyla.ai.neutralize",
    "config_value": "nyla.config",
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
    # agent runtime and file bridge
    "run_agent_loop": "nyla.agent.loop",
    "RunSpec": "nyla.agent.spec",
    "AgentRuntime": "nyla.agent.runtime",
    "FileStore": "nyla.files.store",
    "coerce_document_reference_list": "nyla.files.docrefs",
    "attach_file_as_chat_document": "nyla.files.bridge",
    "format_tool_file_result": "nyla.files.bridge",
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
    "QueryValidator": "nyla.features.validator",
    "compile_ontology_to_prompt": "nyla.features.ontology_compiler",
    "run_feature_data_agent": "nyla.features.data_agent",
    "FeatureAgentResult": "nyla.features.data_agent",
    # knowledge store
    "KnowledgeService": "nyla.knowledge.service",
    "PrecomputedEmbeddings": "nyla.knowledge.precomputed",
    "IndexResult": "nyla.models.knowledge",
    "SearchFilters": "nyla.models.knowledge",
    "SearchHit": "nyla.models.knowledge",
    "SearchResult": "nyla.models.knowledge",
    "Scope": "nyla.models.files",
    "NotFoundError": "nyla.knowledge.consent",
    "PermissionDeniedError": "nyla.knowledge.consent",
    "SettingsValidationError": "nyla.knowledge.limits",
    "DataSourceView": "nyla.knowledge.sources",
    "list_data_sources": "nyla.knowledge.sources",
    "get_data_source": "nyla.knowledge.sources",
    # background jobs
    "JobStore": "nyla.jobs.store",
    # neutralization
    "Neutralizer": "nyla.models.neutralize",
    "Finding": "nyla.models.neutralize",
    # who a command acts as by default (NYLA_USER, else "local")
    "default_user": "nyla.identity",
    # text safe to store and send
    "clean_text": "nyla.text",
    "has_unstorable_chars": "nyla.text",
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
        raise AttributeError(f"module 'nyla' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
