"""``nyla actions list`` (the action catalog: methods, actions, their parameters) and
``nyla workflows list|show`` (stored workflow graphs)."""

from __future__ import annotations

from typing import Any

import click

from nyla.commands.output import emit_json, json_option, run_async, table


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


@click.group()
def workflows() -> None:
    """Stored workflow graphs of action nodes (the agent edits them with the workflow toolbox)."""


_user_option = click.option(
    "--user", "user_id", default=None, help="Whose workflows (default: $NYLA_USER or local)."
)


def _on_kernel(work: Any) -> Any:
    """``await work(kernel, context)`` on a fresh kernel as the CLI's user, then close it."""
    from nyla.kernel import Kernel

    async def go() -> Any:
        kernel = Kernel()
        try:
            return await work(kernel)
        finally:
            await kernel.aclose()

    return run_async(go())


def _context(user_id: str | None) -> Any:
    from nyla.identity import default_user
    from nyla.models.agent import RunContext

    return RunContext(user_id=user_id or default_user())


@workflows.command("list")
@_user_option
@json_option
def workflows_list(user_id: str | None, as_json: bool) -> None:
    """The user's workflows: id, name, nodes, connections, last change."""
    context = _context(user_id)
    graphs = _on_kernel(lambda kernel: kernel.workflows.list_for(context))
    if as_json:
        emit_json({"workflows": [_brief(g) for g in graphs]})
        return
    table(
        "workflows",
        ["id", "name", "nodes", "connections", "updated"],
        [
            (
                g.id,
                g.name,
                len(g.nodes),
                len(g.connections),
                g.updated_at.strftime("%Y-%m-%d %H:%M:%S") if g.updated_at else "-",
            )
            for g in graphs
        ],
    )


@workflows.command("show")
@click.argument("workflow_id")
@_user_option
@json_option
def workflows_show(workflow_id: str, user_id: str | None, as_json: bool) -> None:
    """One workflow: its nodes, connections and what validation finds."""
    from nyla.actions.workflows import WorkflowNotFoundError

    context = _context(user_id)

    async def load(kernel: Any) -> Any:
        return (
            await kernel.workflows.get(workflow_id, context),
            await kernel.workflows.validate(workflow_id, context),
        )

    try:
        graph, problems = _on_kernel(load)
    except WorkflowNotFoundError as exc:
        raise click.ClickException(f"{exc.args[0]} (nyla workflows list shows yours)") from None
    if as_json:
        emit_json({**graph.to_wire(), "problems": [p.to_wire() for p in problems]})
        return
    table(
        f"workflow {graph.id}: {graph.name}",
        ["node", "action", "parameters"],
        [
            (n.id, f"{n.method}.{n.action}", ", ".join(f"{k}={v}" for k, v in n.parameters.items()))
            for n in graph.nodes
        ],
    )
    table(
        "connections",
        ["from node", "to node", "parameter"],
        [(c.from_node, c.to_node, c.to_parameter) for c in graph.connections],
    )
    table("problems", ["node", "code", "message"], [(p.node, p.code, p.message) for p in problems])


def _brief(graph: Any) -> dict[str, Any]:
    wire = graph.to_wire()
    return {
        **{k: wire[k] for k in ("id", "name", "featureInstanceId", "updatedAt")},
        "nodes": len(graph.nodes),
        "connections": len(graph.connections),
    }


def _add_run_commands() -> None:
    """``nyla workflows run|resume|runs|show-run|cancel`` (:mod:`nyla.actions.run_cli`)."""
    from nyla.actions.run_cli import COMMANDS

    for command in COMMANDS:
        workflows.add_command(command)


_add_run_commands()
