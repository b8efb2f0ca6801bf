"""``nyla models|toolboxes|tools list``: what the installed plugins contribute."""

from __future__ import annotations

from typing import Any

import click

from nyla.commands.model_access import allow, allowed
from nyla.commands.output import emit_json, json_option, table


def _host():
    from nyla.plugins import PluginHost

    return PluginHost.discover(strict=False)


def _services(value: str | list[str] | None) -> list[str]:
    """``requires_connection`` as a list (one service or several)."""
    return [value] if isinstance(value, str) else list(value or [])


#: the short names ``nyla models list`` shows for a model's capability flags
CAPABILITY_NAMES = (
    ("tools", "tools"),
    ("streaming", "stream"),
    ("vision", "vision"),
    ("tool_choice", "choice"),
    ("stop_sequences", "stop"),
    ("json_mode", "json"),
    ("structured_output", "schema"),
    ("web_search", "search"),
)


def capability_names(spec: Any) -> str:
    """What ``spec`` declares, in short names (``tools,stream,json,...``)."""
    return ",".join(short for flag, short in CAPABILITY_NAMES if getattr(spec.capabilities, flag))


def _price(value: float | None) -> str:
    return "?" if value is None else f"{value:g}"


@click.group()
def models() -> None:
    """Models offered by the provider plugins, and who may use which."""


models.add_command(allow)
models.add_command(allowed)


@models.command("list")
@click.option(
    "--operation",
    "operation",
    default=None,
    help="Only models for this operation type (e.g. agent, embedding).",
)
@json_option
def models_list(operation: str | None, as_json: bool) -> None:
    """Every model: id, provider, operations, context window, prices (CHF/1M tokens), what it
    can do (tools, stream, vision, choice = tool_choice, stop, json = JSON mode, schema =
    structured output, search), available or why not."""

    from nyla.models.ai import OperationType

    host = _host()
    specs = host.models()
    if operation:
        wanted = {o.value for o in OperationType if operation in (o.value, o.name.lower())}
        if not wanted:
            raise click.ClickException(
                f"unknown operation {operation!r}; one of: "
                + ", ".join(o.value for o in OperationType)
            )
        specs = [s for s in specs if wanted & {str(o) for o in s.operation_types}]
    specs.sort(key=lambda s: s.id)
    if as_json:
        emit_json([s.to_wire() for s in specs])
        return
    table(
        "models",
        ["id", "provider", "operations", "context", "in CHF/1M", "out CHF/1M", "can", "available"],
        [
            (
                s.id,
                s.provider,
                ",".join(str(o) for o in s.operation_types),
                s.context_window,
                _price(s.price_input_chf_per_mtok),
                _price(s.price_output_chf_per_mtok)
                + (f" +{s.price_per_call_chf:g}/call" if s.price_per_call_chf else ""),
                capability_names(s) or "-",
                "yes" if s.available else f"no: {s.unavailable_reason}",
            )
            for s in specs
        ],
    )


@click.group()
def toolboxes() -> None:
    """Toolboxes contributed by the kernel and plugins."""


@toolboxes.command("list")
@json_option
def toolboxes_list(as_json: bool) -> None:
    """Every toolbox: id, tool count, default, required connection, feature code."""
    host = _host()
    rows = []
    for tb in sorted(host.toolboxes.values(), key=lambda t: t.id):
        rows.append(
            {
                "id": tb.id,
                "label": tb.label,
                "tools": [t.name for t in tb.tools],
                "defaultActive": tb.default_active,
                "requiresConnection": tb.requires_connection,
                "featureCode": tb.feature_code,
                "plugin": host.owner_of("toolboxes", tb.id),
            }
        )
    if as_json:
        emit_json(rows)
        return
    table(
        "toolboxes",
        ["id", "tools", "default", "requires connection", "feature", "plugin"],
        [
            (
                r["id"],
                len(r["tools"]),
                "yes" if r["defaultActive"] else "no",
                ", ".join(_services(r["requiresConnection"])) or "-",
                r["featureCode"] or "-",
                r["plugin"],
            )
            for r in rows
        ],
    )


@click.group()
def tools() -> None:
    """Tools the agent can call."""


@tools.command("list")
@click.option("--toolbox", "toolbox", default=None, help="Only this toolbox's tools.")
@json_option
def tools_list(toolbox: str | None, as_json: bool) -> None:
    """Every tool: name, toolbox, read-only, description."""
    from nyla.agent.toolboxes import request_toolbox_tool

    host = _host()
    if toolbox and toolbox not in host.toolboxes:
        raise click.ClickException(f"no toolbox {toolbox!r}")
    items = [t for t in host.tools() if not toolbox or t.toolbox == toolbox]
    if not toolbox:  # the meta tool the agent runtime adds beside the toolboxes
        meta = request_toolbox_tool(sorted(host.toolboxes))
        meta.toolbox = None
        items.append(meta)
    rows = [
        {
            "name": t.name,
            "toolbox": t.toolbox,
            "readOnly": t.read_only,
            "description": t.description,
            "parameters": t.parameters,
        }
        for t in sorted(items, key=lambda t: (t.toolbox or "", t.name))
    ]
    if as_json:
        emit_json(rows)
        return
    table(
        "tools",
        ["name", "toolbox", "read-only", "description"],
        [
            (
                r["name"],
                r["toolbox"] or "-",
                "yes" if r["readOnly"] else "no",
                r["description"].splitlines()[0][:80],
            )
            for r in rows
        ],
    )
