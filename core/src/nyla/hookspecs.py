"""THE extension contract of nyla: every hook a plugin may implement.

A plugin is a module or object with functions marked ``@nyla.hookimpl`` (also
``nyla.sdk.hookimpl``) whose names match the specs below. It is found through an entry point in
one of the groups ``nyla.providers``, ``nyla.toolboxes``, ``nyla.connectors``,
``nyla.walkers``, ``nyla.features``, ``nyla.neutralizers`` and ``nyla.hosts``; the group only
tells the inspector what kind of plugin it is — a plugin may implement any hook. The kernel's own
defaults are registered through the same hooks.

Every hook is called through pluggy, so ``tryfirst`` / ``trylast`` and hook wrappers work:

- The *contribution* hooks (``nyla_providers`` ... ``nyla_neutralizers``) are called once per
  plugin while the plugin host is built, each through a pluggy caller holding only that
  plugin's implementations (``PluginManager.subset_hook_caller``). That keeps one plugin's
  failure its own and every contribution attributed to its plugin; a plugin's own wrappers
  apply to its own answer. Contributions are merged built-ins first, then plugins by name; the
  first holder of an id keeps it, whatever ``tryfirst`` says (ids must be unique).
- ``nyla_cli_commands`` is called the same way, per plugin, so a plugin whose commands fail
  is named and the others' commands stay.
- ``nyla_before_tool_call`` is called once for all plugins, in pluggy's order (``tryfirst``
  first, then the last registered first, ``trylast`` last); hook wrappers see every answer.

Docstrings here follow one layout — what the hook is for, then ``Arguments``, ``Returns``,
``Results`` (``firstresult`` or every answer), ``Sync or async``, ``Called`` and ``Bad
answers`` — and ``docs/hooks.md`` is generated from them (``python -m nyla.hookdoc``); a test
fails when the two differ.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import click

    from nyla.models.actions import Method
    from nyla.models.ai import Provider
    from nyla.models.datasource import ConnectorAdapter, Walker
    from nyla.models.feature import Feature
    from nyla.models.neutralize import Neutralizer
    from nyla.models.settings_sections import SettingsSection
    from nyla.models.tools import Tool, Toolbox, ToolContext, ToolResult

PROJECT_NAME = "nyla"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

_CONTRIBUTION_RULES = """
    Results: not ``firstresult``; every plugin's list is collected and merged (built-ins
    first, then plugins by name).

    Sync or async: sync only (an ``async def`` answers a coroutine, which is a wrong type).

    Called: once per plugin when the plugin host is built (``PluginHost.discover`` — every
    ``nyla`` command and host start — or ``PluginHost.from_plugins``).

    Bad answers: an exception, something that is not a list, or an item of the wrong type
    leaves the whole plugin out, reported by name with the reason (``nyla plugins list``); an
    id another plugin already holds leaves out the later plugin. ``None`` (a forgotten
    ``return``) counts as an empty list with a warning. ``NYLA_STRICT_PLUGINS=1`` makes every
    one of these, warnings included, an error.
"""


@hookspec
def nyla_providers() -> list[Provider]:
    """Model providers this plugin contributes.

    Arguments: none.

    Returns: a list of :class:`~nyla.models.ai.Provider` implementations (most subclass
    ``nyla.sdk.ProviderBase`` or ``nyla.sdk.OpenAICompatibleProvider``). Each lists its
    :class:`~nyla.models.ai.ModelSpec` s (operation types, context window, prices in CHF,
    capabilities, ranks) and implements async ``chat`` / ``stream`` / ``embed`` /
    ``web_search`` / ``generate_image`` as its models support (the others raise
    ``NotImplementedError``). ``models()`` must be cheap and must not import the vendor SDK.
    The kernel keeps a provider's specs until a setting changes (the environment, or the
    config file on ``nyla.config.reload()``); a provider whose list changes for another
    reason sets ``models_cacheable = False`` and is asked on every model selection. A spec
    is not changed once listed (a changed model is a new spec).
    A ``ChatRequest`` carries ``tool_choice``, ``stop`` and ``response_format`` only to a
    model declaring the capability each needs (``tool_choice``, ``stop_sequences``,
    ``json_mode``, ``structured_output``; the AI service refuses the others before the
    call); the provider maps them to its vendor's fields.
    A provider whose vectors are float32 to begin with may also offer async
    ``embed_float32(model, texts) -> (bytes, dimension, Usage)``: the vectors as native float32
    values, one row after the other. Callers that store vectors as float4 (round memory, through
    ``AiService.embed_rows``) take them that way, with the same gate, route, price and billing as
    ``embed``, and no Python float made and checked for each value; an answer of the wrong type,
    length or dimension fails that call with a ``ProviderError``. Every other caller, and every
    provider without it, goes through ``embed`` (the local provider offers both).
    {rules}
    Consumed by: the AI service (``kernel.ai``). A provider whose call answers the wrong type
    (``chat`` must return ``ChatResponse``, ``stream`` yield ``StreamDelta``, ``embed`` return
    ``EmbeddingResponse``) fails that call with a ``ProviderError`` naming the plugin.
    """


@hookspec
def nyla_toolboxes() -> list[Toolbox]:
    """Toolboxes this plugin contributes.

    Arguments: none.

    Returns: a list of :class:`~nyla.models.tools.Toolbox` (id, tools, ``default_active``,
    ``requires_connection``, ``feature_code``). Toolbox ids and tool names are unique across
    all plugins and the built-ins (``core``, ``ai``, ``readFile`` ...); every tool's
    ``parameters`` must be a valid JSON schema of an object. A
    :class:`~nyla.models.run_toolboxes.RunToolboxes` among them (``nyla.sdk.run_toolboxes``)
    stands for toolboxes resolved when each run starts, from the plugin's rows in the
    kernel's database (bound with ``bind(db)``); it is never offered itself.
    {rules}
    A tool a model API would reject (an invalid name, a schema that is not a valid JSON schema
    of an object) is left out with a warning on the plugin; the rest of the plugin stays.

    Consumed by: the agent's toolbox registry (``kernel.agent``), ``nyla tools list``.
    """


@hookspec
def nyla_connectors() -> list[ConnectorAdapter]:
    """Adapters to external services this plugin contributes.

    Arguments: none.

    Returns: a list of :class:`~nyla.models.datasource.ConnectorAdapter` (browse / search /
    download, scoping, pagination, metadata normaliser). The ``service`` id must be unique.
    {rules}
    Consumed by: the connection service (``kernel.connections``: connect, token refresh,
    browse, search, download), the toolboxes that reach a connection through it, ``nyla run``
    (the toolboxes of the user's connections) and ``nyla serve``'s data-source routes.
    """


@hookspec
def nyla_walkers() -> list[Walker]:
    """RAG walkers this plugin contributes.

    Arguments: none.

    Returns: a list of :class:`~nyla.models.datasource.Walker`, each naming the connector
    ``services`` it syncs into the knowledge store. The ``id`` must be unique.
    {rules}
    Consumed by: ``nyla serve`` (a data source's first sync, and the catalog's "can be
    indexed" flag). The kernel's own walker runner and its jobs come with their own issue.
    """


@hookspec
def nyla_features() -> list[Feature]:
    """Business features this plugin contributes.

    Arguments: none.

    Returns: a list of :class:`~nyla.models.feature.Feature` (feature code, tables, data
    provider, ontology, domain hints, benchmark questions). The ``code`` must be unique.
    {rules}
    Consumed by: the feature data agent (``queryFeatureInstance``), ``nyla feature``,
    ``nyla eval``; ``nyla plugins check`` verifies the ontology against the tables.
    """


@hookspec
def nyla_neutralizers() -> list[Neutralizer]:
    """Detectors of personal data this plugin contributes.

    Arguments: none.

    Returns: a list of :class:`~nyla.models.neutralize.Neutralizer`; each only *finds*
    personal data (``find(text) -> list[Finding]``). The ``id`` must be unique.
    {rules}
    Consumed by: the AI service's neutralization gate, which merges the findings of every
    neutralizer before any model call and replaces them by placeholders stable within a run.
    A neutralizer that raises while the run requires neutralization blocks the call
    (``NeutralizationError``); otherwise the failure is recorded and the call goes on.
    """


@hookspec
def nyla_cli_commands(cli: click.Group) -> None:
    """Add subcommands to the ``nyla`` command group (e.g. ``nyla feature seed trustee``).

    Arguments: ``cli`` — the ``nyla`` :class:`click.Group`; call ``cli.add_command(...)``.

    Returns: nothing (the answer is ignored).

    Results: every implementation is called.

    Sync or async: sync only.

    Called: once per plugin (through pluggy), when ``nyla`` is asked for a command name the
    kernel does not have.

    Bad answers: an implementation that raises is reported as a warning naming the plugin
    and the other plugins' commands stay available (an error under ``NYLA_STRICT_PLUGINS=1``).
    """


@hookspec
def nyla_before_tool_call(
    tool: Tool, arguments: dict[str, Any], context: ToolContext
) -> ToolResult | None:
    """Allow or deny a tool call before it runs (policy, audit, trust checks).

    Arguments: ``tool`` — the :class:`~nyla.models.tools.Tool` about to run; ``arguments`` —
    its arguments as the model sent them, already parsed and validated against the schema;
    ``context`` — the call's :class:`~nyla.models.tools.ToolContext` (``context.run`` holds
    the user, mandate, feature instance and workflow).

    Returns: ``None`` to allow, or a failed :class:`~nyla.models.tools.ToolResult` whose
    ``error`` (and ``error_details``, if set) the model sees instead of the tool's result.

    Results: not ``firstresult``: every implementation is consulted (audit hooks see every
    call); then the first denial in pluggy's order wins (``tryfirst`` first, then the last
    registered first).

    Sync or async: either; an ``async def`` implementation is awaited.

    Called: for every tool call that passed validation, after the repeated-call check and
    before the handler, inside the run.

    Bad answers: an implementation that raises denies the call (fails closed) with the
    exception's message; any answer that is neither ``None`` nor a ``ToolResult`` denies with
    its text.
    """


@hookspec
def nyla_methods() -> list[Method]:
    """Workflow methods and their typed actions this plugin contributes.

    Arguments: none.

    Returns: a list of :class:`~nyla.models.actions.Method`, each with its
    :class:`~nyla.models.actions.Action` list (a pydantic parameter model, whether it
    writes, a description, an async handler). The method ``name`` must be unique.
    {rules}
    Consumed by: the action catalog (``nyla actions list``, ``GET /api/automation2/catalog``)
    and the agent, which gets every action as a tool ``{method}_{action}`` unless
    ``AgentConfig.exclude_action_tools``; every call goes through the one action executor.
    """


@hookspec
def nyla_settings_sections() -> list[SettingsSection]:
    """Settings sections this plugin contributes (e.g. the MCP servers of a user or a mandate).

    Arguments: none.

    Returns: a list of :class:`~nyla.models.settings_sections.SettingsSection`, each listing,
    adding and removing the entries of one owner (a user, or a mandate for all its users);
    its methods are ``async``. The ``id`` must be unique.
    {rules}
    Consumed by: a host's settings (``/api/settings/sections`` on ``nyla serve``, the page's
    MCP servers tab), which checks first that the caller may: their own entries as a user, a
    mandate's as its admin (listing a mandate's: any of its users).
    """


def _with_rules() -> None:
    # one text for the rules every contribution hook shares, kept in one place
    for spec in (
        nyla_providers,
        nyla_toolboxes,
        nyla_connectors,
        nyla_walkers,
        nyla_features,
        nyla_neutralizers,
        nyla_methods,
        nyla_settings_sections,
    ):
        spec.__doc__ = (spec.__doc__ or "").replace("{rules}", _CONTRIBUTION_RULES)


_with_rules()
