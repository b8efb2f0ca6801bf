"""``nyla actions list``: the action catalog (methods, actions, their parameters)."""

from __future__ import annotations

from typing import Any

import click

from nyla.commands.output import emit_json, json_option, table


@click.group()
def actions() -> None:
    """Workflow methods and their typed actions (the agent gets each as a tool)."""


@actions.command("list")
@json_option
def actions_list(as_json: bool) -> None:
    """Every action: its tool name, whether it writes, its parameters (* required, with the
    reference kind an id must be of), and what it does."""
    from nyla.actions.catalog import ActionCatalog
    from nyla.plugins import PluginHost

    catalog = ActionCatalog(PluginHost.discover(strict=False).methods)
    if as_json:
        emit_json(catalog.to_wire())
        return
    table(
        "actions",
        ["tool", "writes", "parameters", "description"],
        [
            (
                node["tool"],
                "yes" if node["writes"] else "no",
                _parameters(node),
                node["description"],
            )
            for node in catalog.node_definitions()
        ],
    )


def _parameters(node: dict[str, Any]) -> str:
    """``name*: type`` per parameter (``*`` required; ``-> kind`` for a reference)."""
    schema = node["parameters"]
    required = set(schema.get("required", []))
    out = []
    for name, prop in schema.get("properties", {}).items():
        ref = node["references"].get(name)
        kind = f"{ref['kind']} id{'s' if ref['many'] else ''}" if ref else _type(prop)
        out.append(f"{name}{'*' if name in required else ''}: {kind}")
    return ", ".join(out) or "-"


def _type(prop: dict[str, Any]) -> str:
    if "type" in prop:
        return str(prop["type"])
    return "|".join(str(p.get("type", "?")) for p in prop.get("anyOf", [])) or "?"
