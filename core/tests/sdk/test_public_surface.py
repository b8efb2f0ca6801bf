"""The three faces: ``nyla`` (a library user's names), ``nyla.host`` (what only a host app
holds) and ``nyla.sdk`` (a plugin's). Every name of each resolves, a type checker sees each
lazy name with its real type, every top-level name is decided on, and no storage internal or
service is a top-level or a plugin name."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import nyla
import nyla.host
import nyla.sdk

#: top-level names a library user needs that plugins do not get from ``nyla.sdk``: the kernel
#: object, agent events and traces, the connector and walker contracts (``nyla.sdk.connectors``
#: holds the plugin side), what ``kernel.knowledge`` takes and answers, the errors of storage
#: and the knowledge store. A new top-level name goes either here or into ``nyla.sdk``.
LIBRARY_ONLY = {
    "__version__",
    "hookspec",
    "Kernel",
    "AgentStatus",
    "AgentEvent",
    "EventType",
    "AgentTrace",
    "ToolCallLog",
    "ConnectorAdapter",
    "ConnectionInfo",
    "DownloadedFile",
    "JobProgress",
    "Walker",
    "WalkResult",
    "PrecomputedEmbeddings",
    "IndexResult",
    "Scope",
    "NotFoundError",
    "PermissionDeniedError",
    "SettingsValidationError",
    "DatabaseUnavailableError",
    "DatabaseQueryError",
    "FolderNotEmptyError",
}

#: what a plugin author reaches for beyond the provider base classes: what
#: ``ctx.services.ai.call`` answers and its typed parts, the tool context, the errors a tool
#: catches
PLUGIN_AUTHOR = {
    "AiCallRequest",
    "AiCallResponse",
    "FallbackNote",
    "InvalidToolArguments",
    "NeutralizationReport",
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

#: helpers both a host and a plugin use (settings lookup, text a database can store)
SHARED_WITH_PLUGINS = {"config_value", "clean_text", "has_unstorable_chars"}

#: what the top-level package must never offer: storage, the plugin host, the services
STORAGE_AND_SERVICES = {
    "Database",
    "Base",
    "metadata",
    "PluginHost",
    "PluginRecord",
    "AiService",
    "ConnectionService",
    "KnowledgeService",
    "FileStore",
    "JobStore",
    "AgentRuntime",
    "run_agent_loop",
}


def test_every_public_name_resolves() -> None:
    for face in (nyla, nyla.host, nyla.sdk):
        for name in face.__all__:
            assert getattr(face, name) is not None, f"{face.__name__}.{name} does not load"


@pytest.mark.parametrize("face", [nyla, nyla.host], ids=lambda f: f.__name__)
def test_a_type_checker_sees_every_lazy_name_from_its_module(face: ModuleType) -> None:
    """The ``if TYPE_CHECKING`` block of the face imports exactly the lazy names, each from
    the module ``__getattr__`` loads it from (otherwise mypy types it ``Any``)."""
    tree = ast.parse(Path(str(face.__file__)).read_text(encoding="utf-8"))
    seen: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module
                for alias in imp.names:
                    assert alias.asname == alias.name, f"{alias.name}: write `X as X` to export"
                    seen[alias.name] = imp.module
    exports = face._EXPORTS
    assert seen == exports, {
        "missing": sorted(set(exports) - set(seen)),
        "extra": sorted(set(seen) - set(exports)),
        "moved": sorted(n for n in set(seen) & set(exports) if seen[n] != exports[n]),
    }


def test_plugin_author_names_are_in_the_sdk_and_are_the_same_objects() -> None:
    missing = sorted(PLUGIN_AUTHOR - set(nyla.sdk.__all__))
    assert not missing, f"nyla.sdk lacks {missing}"
    for other in (nyla, nyla.host):
        for name in set(nyla.sdk.__all__) & set(other.__all__):
            assert getattr(nyla.sdk, name) is getattr(other, name), f"{name} differs"


def test_every_top_level_name_is_placed_either_in_the_sdk_or_library_only() -> None:
    """A new name in ``nyla`` must be decided on: exported for plugins too, or listed."""
    undecided = sorted(set(nyla.__all__) - set(nyla.sdk.__all__) - LIBRARY_ONLY - {"hookimpl"})
    assert not undecided, f"add to nyla.sdk (for plugins) or to LIBRARY_ONLY: {undecided}"
    both = sorted(LIBRARY_ONLY & set(nyla.sdk.__all__))
    assert not both, f"library-only names that nyla.sdk exports: {both}"


def test_storage_and_services_are_host_only() -> None:
    assert set(nyla.host.__all__) >= STORAGE_AND_SERVICES
    assert not STORAGE_AND_SERVICES & set(nyla.__all__), "the top level offers host internals"
    assert not STORAGE_AND_SERVICES & set(nyla.sdk.__all__), "nyla.sdk offers host internals"
    # the host face adds to the top level: the kernel object is the one name in both
    assert set(nyla.__all__) & set(nyla.host.__all__) == {"Kernel"}
    assert set(nyla.host.__all__) & set(nyla.sdk.__all__) == SHARED_WITH_PLUGINS


def test_a_host_only_name_asked_of_the_top_level_says_where_it_went() -> None:
    with pytest.raises(AttributeError, match=r"'Database' \(host-only: import it from nyla.host\)"):
        nyla.Database  # noqa: B018
    with pytest.raises(AttributeError, match=r"no attribute 'Nothing'$"):
        nyla.Nothing  # noqa: B018


@pytest.mark.parametrize("face", ["nyla.sdk", "nyla", "nyla.host"])
def test_faces_stay_light(face: str) -> None:
    """Importing a face (``nyla.sdk`` is what every plugin does at discovery) loads no
    database layer; the names load on first use."""
    code = f"import sys, {face}; print(any(m.startswith('sqlalchemy') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr
