"""The public names: every one of ``nyla`` resolves, a type checker sees each with its real
type, and every one a plugin author needs is in ``nyla.sdk`` too."""

from __future__ import annotations

import ast
from pathlib import Path

import nyla
import nyla.sdk

#: names of ``nyla`` for hosts and the kernel's own tools, not for plugins: the kernel object,
#: its services and stores, its database, the agent loop, the data-agent helpers, lookups of
#: the knowledge store. A new top-level name goes either here or into ``nyla.sdk``.
HOST_ONLY = {
    "__version__",
    "hookspec",
    "Kernel",
    "PluginHost",
    "PluginRecord",
    "ConnectionService",
    "Database",
    "Base",
    "metadata",
    "AiService",
    "NeutralizationSession",
    "AgentRuntime",
    "run_agent_loop",
    "RunSpec",
    "AgentStatus",
    "AgentEvent",
    "EventType",
    "AgentTrace",
    "ToolCallLog",
    "FileStore",
    "coerce_document_reference_list",
    "attach_file_as_chat_document",
    "format_tool_file_result",
    # the connector side lives in nyla.sdk.connectors
    "ConnectorAdapter",
    "ConnectionInfo",
    "DownloadedFile",
    "JobProgress",
    "Walker",
    "WalkResult",
    "QueryValidator",
    "compile_ontology_to_prompt",
    "run_feature_data_agent",
    "FeatureAgentResult",
    "KnowledgeService",
    "PrecomputedEmbeddings",
    "IndexResult",
    "Scope",
    "NotFoundError",
    "PermissionDeniedError",
    "SettingsValidationError",
    "DataSourceView",
    "list_data_sources",
    "get_data_source",
    "JobStore",
    "DatabaseUnavailableError",
    "DatabaseQueryError",
    "FolderNotEmptyError",
    # who the CLI acts as; a host shares it so the page and the CLI are one person
    "default_user",
}

#: what a plugin author reaches for beyond the provider base classes: the answer of
#: ``ctx.services.ai.call`` and its typed parts, the type of ``ToolContext.services``, the
#: errors a tool catches
PLUGIN_AUTHOR = {
    "AiCallRequest",
    "AiCallResponse",
    "FallbackNote",
    "InvalidToolArguments",
    "NeutralizationReport",
    "ToolServices",
    "ToolContext",
    "RunContext",
    "AgentConfig",
    "BudgetExceeded",
    "FileAccessError",
    "NeutralizationError",
    "SearchHit",
    "SearchResult",
    "clean_text",
}


def test_every_public_name_resolves() -> None:
    for name in nyla.__all__:
        assert getattr(nyla, name) is not None, f"nyla.{name} is listed but does not load"
    for name in nyla.sdk.__all__:
        assert hasattr(nyla.sdk, name), f"nyla.sdk.{name} is listed but missing"


def test_a_type_checker_sees_every_lazy_name_from_its_module() -> None:
    """The ``if TYPE_CHECKING`` block of ``nyla/__init__.py`` imports exactly the lazy names,
    each from the module ``__getattr__`` loads it from (otherwise mypy types it ``Any``)."""
    tree = ast.parse(Path(nyla.__file__).read_text(encoding="utf-8"))
    seen: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module
                for alias in imp.names:
                    assert alias.asname == alias.name, f"{alias.name}: write `X as X` to export"
                    seen[alias.name] = imp.module
    exports = nyla._EXPORTS  # type: ignore[attr-defined]
    assert seen == exports, {
        "missing": sorted(set(exports) - set(seen)),
        "extra": sorted(set(seen) - set(exports)),
        "moved": sorted(n for n in set(seen) & set(exports) if seen[n] != exports[n]),
    }


def test_plugin_author_names_are_in_the_sdk_and_are_the_same_objects() -> None:
    missing = sorted(PLUGIN_AUTHOR - set(nyla.sdk.__all__))
    assert not missing, f"nyla.sdk lacks {missing}"
    for name in set(nyla.sdk.__all__) & set(nyla.__all__):
        assert getattr(nyla.sdk, name) is getattr(nyla, name), f"{name} differs"


def test_every_top_level_name_is_placed_either_in_the_sdk_or_host_only() -> None:
    """A new name in ``nyla`` must be decided on: exported for plugins or listed as host-only."""
    undecided = sorted(set(nyla.__all__) - set(nyla.sdk.__all__) - HOST_ONLY - {"hookimpl"})
    assert not undecided, f"add to nyla.sdk (for plugins) or to HOST_ONLY: {undecided}"
    both = sorted(HOST_ONLY & set(nyla.sdk.__all__))
    assert not both, f"host-only names that nyla.sdk exports: {both}"


def test_sdk_stays_light() -> None:
    """Importing ``nyla.sdk`` (what every plugin does at discovery) loads no database layer."""
    import subprocess
    import sys

    code = "import sys, nyla.sdk; print(any(m.startswith('sqlalchemy') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr
