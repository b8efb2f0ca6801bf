"""THE extension contract of nyla: every hook a plugin may implement.

A plugin is a module or object with functions marked ``@nyla.hookimpl`` whose names match
the specs below. It is found through an entry point in one of the groups ``nyla.providers``,
``nyla.toolboxes``, ``nyla.connectors``, ``nyla.walkers``, ``nyla.features``,
``nyla.neutralizers`` and ``nyla.hosts``; the group only tells the inspector what kind of plugin it is — a plugin
may implement any hook. Hooks return typed objects (pydantic models or protocol
implementations), never dicts; the kernel checks the types and reports a plugin that returns
anything else. The kernel's own defaults are registered through the same hooks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import click

    from nyla.models.ai import Provider
    from nyla.models.datasource import ConnectorAdapter, Walker
    from nyla.models.feature import Feature
    from nyla.models.neutralize import Neutralizer
    from nyla.models.tools import Tool, Toolbox, ToolContext, ToolResult

PROJECT_NAME = "nyla"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec
def nyla_providers() -> list[Provider]:
    """Model providers this plugin contributes.

    Each :class:`~nyla.models.ai.Provider` lists its :class:`~nyla.models.ai.ModelSpec` s
    (operation types, context window, prices in CHF, capabilities, ranks) and implements
    async ``chat`` / ``stream`` / ``embed`` / ``web_search`` as its models support.
    Must not import the vendor SDK: discovery stays fast; import it on first call.
    """


@hookspec
def nyla_toolboxes() -> list[Toolbox]:
    """Toolboxes this plugin contributes: id, tools, default on/off, the connection it
    requires, the feature code it belongs to. Tool names must be unique across all plugins."""


@hookspec
def nyla_connectors() -> list[ConnectorAdapter]:
    """Adapters to external services (browse / search / download, scoping, pagination,
    metadata normaliser). The ``service`` id must be unique."""


@hookspec
def nyla_walkers() -> list[Walker]:
    """RAG walkers: which connector services each syncs into the knowledge store."""


@hookspec
def nyla_features() -> list[Feature]:
    """Business features: feature code, tables, data provider, ontology, domain hints,
    benchmark questions."""


@hookspec
def nyla_neutralizers() -> list[Neutralizer]:
    """Detectors of personal data; the AI service's gate runs all of them before any model
    call and replaces what they find with stable placeholders."""


@hookspec
def nyla_cli_commands(cli: click.Group) -> None:
    """Add subcommands to the ``nyla`` command group (e.g. ``nyla feature seed trustee``)."""


@hookspec
def nyla_before_tool_call(
    tool: Tool, arguments: dict[str, Any], context: ToolContext
) -> ToolResult | None:
    """Called before every tool call. Return ``None`` to allow it, or a failed
    :class:`~nyla.models.tools.ToolResult` whose error the model sees (policy, audit, trust
    checks). The first denial wins."""
