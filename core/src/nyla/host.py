"""nyla.host: the face for host apps — the web host, the ``nyla`` CLI, a service that embeds
the kernel, and the tests that build one.

The top-level ``nyla`` package is what a library user needs (the kernel object, the models
passed to a run or a model call, the errors); ``nyla.sdk`` is what a plugin may use. This
module adds what only a host holds: the plugin host, the database and its tables' metadata,
the services and stores the kernel builds, the agent loop entry, the knowledge store's
lookups and the settings. Names load on first use, so importing this module costs nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# What a type checker sees; at run time the names load lazily (__getattr__ below).
# isort: off
if TYPE_CHECKING:
    from nyla.access.permissions import (
        AccessSubject as AccessSubject,
        ServiceAccessDenied as ServiceAccessDenied,
        connector_permission as connector_permission,
        parse_permission as parse_permission,
        parse_role as parse_role,
    )
    from nyla.access.service import service_permissions as service_permissions
    from nyla.actions.graph import WorkflowEditError as WorkflowEditError
    from nyla.actions.runs import (
        WorkflowNotRunnableError as WorkflowNotRunnableError,
        WorkflowRunNotFoundError as WorkflowRunNotFoundError,
    )
    from nyla.actions.workflows import WorkflowNotFoundError as WorkflowNotFoundError
    from nyla.agent.connection_tools import ConnectionTools as ConnectionTools
    from nyla.agent.loop import run_agent_loop as run_agent_loop
    from nyla.agent.spec import RunSpec as RunSpec
    from nyla.agent.runtime import AgentRuntime as AgentRuntime
    from nyla.agent.durable import DurableRuns as DurableRuns
    from nyla.agent.run_bus import channel_name as channel_name
    from nyla.agent.run_tables import StoredRun as StoredRun, StoredRunEvent as StoredRunEvent
    from nyla.agent.run_resume import (
        RunNotFound as RunNotFound,
        RunNotResumable as RunNotResumable,
        UnfinishedWrites as UnfinishedWrites,
        resumption as resumption,
    )
    from nyla.ai.neutralize import NeutralizationSession as NeutralizationSession
    from nyla.ai.service import AiService as AiService
    from nyla.config import config_value as config_value
    from nyla.connections.service import ConnectionService as ConnectionService
    from nyla.db import Base as Base, Database as Database, metadata as metadata
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
    from nyla.identity import default_user as default_user
    from nyla.jobs.store import JobStore as JobStore
    from nyla.kernel import Kernel as Kernel
    from nyla.knowledge.service import KnowledgeService as KnowledgeService
    from nyla.knowledge.sources import (
        DataSourceView as DataSourceView,
        get_data_source as get_data_source,
        list_data_sources as list_data_sources,
    )
    from nyla.models.chat import ChatWorkflow as ChatWorkflow
    from nyla.models.workflow_runs import RunOptions as RunOptions
    from nyla.models.workflows import (
        WorkflowConnection as WorkflowConnection,
        WorkflowNode as WorkflowNode,
    )
    from nyla.plugins import PluginHost as PluginHost, PluginRecord as PluginRecord
    from nyla.text import clean_text as clean_text, has_unstorable_chars as has_unstorable_chars
# isort: on

_EXPORTS: dict[str, str] = {
    # the kernel and its plugins
    "Kernel": "nyla.kernel",
    "PluginHost": "nyla.plugins",
    "PluginRecord": "nyla.plugins",
    # service access (kernel.service_access decides; these name who asks and what)
    "AccessSubject": "nyla.access.permissions",
    "ServiceAccessDenied": "nyla.access.permissions",
    "connector_permission": "nyla.access.permissions",
    "parse_permission": "nyla.access.permissions",
    "parse_role": "nyla.access.permissions",
    "service_permissions": "nyla.access.service",
    # storage
    "Database": "nyla.db",
    "Base": "nyla.db",
    "metadata": "nyla.db",
    # services and stores (each also an attribute of the kernel: kernel.ai, kernel.files, ...)
    "AiService": "nyla.ai.service",
    "NeutralizationSession": "nyla.ai.neutralize",
    "ConnectionService": "nyla.connections.service",
    "KnowledgeService": "nyla.knowledge.service",
    "FileStore": "nyla.files.store",
    "JobStore": "nyla.jobs.store",
    "AgentRuntime": "nyla.agent.runtime",
    # durable runs (kernel.runs): recorded, driven here or on a worker, streamed anywhere
    "DurableRuns": "nyla.agent.durable",
    "channel_name": "nyla.agent.run_bus",
    "StoredRun": "nyla.agent.run_tables",
    "StoredRunEvent": "nyla.agent.run_tables",
    # resuming an interrupted run (the web host's resume and `nyla runs resume` alike)
    "resumption": "nyla.agent.run_resume",
    "RunNotFound": "nyla.agent.run_resume",
    "RunNotResumable": "nyla.agent.run_resume",
    "UnfinishedWrites": "nyla.agent.run_resume",
    # the agent loop entry and what it runs (kernel.agent.run builds the spec)
    "run_agent_loop": "nyla.agent.loop",
    "RunSpec": "nyla.agent.spec",
    # a user's connection toolboxes called outside a run, through a run's gate (MCP server)
    "ConnectionTools": "nyla.agent.connection_tools",
    # the feature data agent and its parts
    "run_feature_data_agent": "nyla.features.data_agent",
    "FeatureAgentResult": "nyla.features.data_agent",
    "QueryValidator": "nyla.features.validator",
    "compile_ontology_to_prompt": "nyla.features.ontology_compiler",
    # files in a run
    "coerce_document_reference_list": "nyla.files.docrefs",
    "attach_file_as_chat_document": "nyla.files.bridge",
    "format_tool_file_result": "nyla.files.bridge",
    "ChatWorkflow": "nyla.models.chat",
    # lookups of the knowledge store
    "DataSourceView": "nyla.knowledge.sources",
    "list_data_sources": "nyla.knowledge.sources",
    "get_data_source": "nyla.knowledge.sources",
    # stored workflow graphs (kernel.workflows): the editor's wire types and refusals
    "WorkflowNode": "nyla.models.workflows",
    "WorkflowConnection": "nyla.models.workflows",
    "WorkflowEditError": "nyla.actions.graph",
    "WorkflowNotFoundError": "nyla.actions.workflows",
    # workflow runs (kernel.workflow_runs): their options and refusals
    "RunOptions": "nyla.models.workflow_runs",
    "WorkflowNotRunnableError": "nyla.actions.runs",
    "WorkflowRunNotFoundError": "nyla.actions.runs",
    # settings: the environment and the config file; who a command acts as by default
    "config_value": "nyla.config",
    "default_user": "nyla.identity",
    # text a host accepts, stores and sends
    "clean_text": "nyla.text",
    "has_unstorable_chars": "nyla.text",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'nyla.host' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
