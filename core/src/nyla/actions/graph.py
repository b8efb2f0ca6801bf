"""Workflow graph logic without storage: each edit checked against the action catalog (node
parameters against the action's signature, a connection's types against both signatures)
and the validation of a whole graph (unknown action, missing required parameter, type
mismatch, cycle), each problem naming its node."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from nyla.actions.catalog import ActionCatalog, parameters_schema, reference_fields
from nyla.models.actions import Action
from nyla.models.workflows import WorkflowConnection, WorkflowGraph, WorkflowNode, WorkflowProblem


class WorkflowEditError(ValueError):
    """An edit that does not fit the graph or the catalog; the message says what to fix."""


def _action(catalog: ActionCatalog, node: WorkflowNode) -> Action | None:
    found = catalog.get(node.method, node.action)
    return found[1] if found else None


def accepted_outputs(params: type[BaseModel], wire: str) -> set[str]:
    """The node outputs (``text``, ``json``, ``file``, ``files``) parameter ``wire`` takes."""
    for _name, ref_wire, kind, many in reference_fields(params):
        if ref_wire == wire:
            if kind != "file":
                return set()
            return {"file", "files"} if many else {"file"}
    prop = parameters_schema(params).get("properties", {}).get(wire, {})
    variants = prop.get("anyOf", [prop])
    types = {v.get("type") for v in variants} - {"null"}
    accepted = set()
    if "string" in types:
        accepted.add("text")
    if types & {"object", "array"}:
        accepted.add("json")
    return accepted


def parameter_problems(action: Action, parameters: dict[str, Any]) -> list[str]:
    """What is wrong with the set parameters (an unknown name, a value of the wrong type).
    A required parameter left out is not a problem here (a connection may feed it), nor is a
    check across parameters (it may hold once connections feed theirs; the executor makes it
    when the node runs)."""
    try:
        action.params.model_validate(parameters)
    except ValidationError as exc:
        return [
            f"{'.'.join(str(p) for p in err['loc']) or 'parameters'}: {err['msg']}"
            for err in exc.errors()
            if err["type"] != "missing" and err["loc"]
        ]
    return []


def check_node(catalog: ActionCatalog, node: WorkflowNode) -> None:
    """Refuse a node whose action is unknown or whose parameters do not fit its signature."""
    action = _action(catalog, node)
    if action is None:
        raise WorkflowEditError(
            f"node {node.id!r}: unknown action {node.method}.{node.action} "
            "(nyla actions list shows the catalog)"
        )
    problems = parameter_problems(action, node.parameters)
    if problems:
        raise WorkflowEditError(f"node {node.id!r}: " + "; ".join(problems))


def check_connection(
    catalog: ActionCatalog, graph: WorkflowGraph, connection: WorkflowConnection
) -> None:
    """Refuse a connection between missing nodes, into an unknown or already fed parameter,
    or whose types do not fit."""
    for end in (connection.from_node, connection.to_node):
        if graph.node(end) is None:
            raise WorkflowEditError(f"no node {end!r} in workflow {graph.id}")
    if connection.from_node == connection.to_node:
        raise WorkflowEditError(f"node {connection.to_node!r} cannot feed itself")
    fed = [c for c in graph.connections if (c.to_node, c.to_parameter) == _target(connection)]
    if fed:
        raise WorkflowEditError(
            f"node {connection.to_node!r}: parameter {connection.to_parameter!r} is already fed "
            f"by node {fed[0].from_node!r} (disconnect it first)"
        )
    problem = connection_problem(catalog, graph, connection)
    if problem is not None:
        raise WorkflowEditError(problem)


def _target(connection: WorkflowConnection) -> tuple[str, str]:
    return connection.to_node, connection.to_parameter


def connection_problem(
    catalog: ActionCatalog, graph: WorkflowGraph, connection: WorkflowConnection
) -> str | None:
    """Why the connection's types do not fit (``None`` when they do or an end is unknown)."""
    source, target = graph.node(connection.from_node), graph.node(connection.to_node)
    if source is None or target is None:
        return None
    out, into = _action(catalog, source), _action(catalog, target)
    if out is None or into is None:
        return None
    wire = connection.to_parameter
    if wire not in parameters_schema(into.params).get("properties", {}):
        return f"node {target.id!r}: {target.method}.{target.action} has no parameter {wire!r}"
    accepted = accepted_outputs(into.params, wire)
    if out.output not in accepted:
        takes = ", ".join(sorted(accepted)) or "no node output"
        return (
            f"node {target.id!r}: parameter {wire!r} takes {takes}, but node {source.id!r} "
            f"({source.method}.{source.action}) gives {out.output}"
        )
    return None


def validate_graph(catalog: ActionCatalog, graph: WorkflowGraph) -> list[WorkflowProblem]:
    """Every problem of ``graph``, by node order: unknown actions, parameters that do not fit,
    required parameters neither set nor connected, type mismatches, cycles."""
    problems: list[WorkflowProblem] = []
    for node in graph.nodes:
        action = _action(catalog, node)
        if action is None:
            problems.append(
                WorkflowProblem(
                    node=node.id,
                    code="UNKNOWN_ACTION",
                    message=f"node {node.id!r}: unknown action {node.method}.{node.action}",
                )
            )
            continue
        for problem in parameter_problems(action, node.parameters):
            problems.append(
                WorkflowProblem(
                    node=node.id, code="INVALID_VALUE", message=f"node {node.id!r}: {problem}"
                )
            )
        fed = {c.to_parameter for c in graph.connections if c.to_node == node.id}
        schema = parameters_schema(action.params)
        for wire in schema.get("required", []):
            if wire not in node.parameters and wire not in fed:
                problems.append(
                    WorkflowProblem(
                        node=node.id,
                        code="MISSING_PARAMETER",
                        message=f"node {node.id!r}: required parameter {wire!r} is neither "
                        "set nor connected",
                    )
                )
    for connection in graph.connections:
        mismatch = connection_problem(catalog, graph, connection)
        if mismatch is not None:
            problems.append(
                WorkflowProblem(node=connection.to_node, code="TYPE_MISMATCH", message=mismatch)
            )
    cycle = find_cycle(graph)
    if cycle:
        path = " -> ".join([*cycle, cycle[0]])
        problems.append(
            WorkflowProblem(
                node=cycle[0], code="CYCLE", message=f"node {cycle[0]!r} is in a cycle: {path}"
            )
        )
    return problems


def find_cycle(graph: WorkflowGraph) -> list[str]:
    """The nodes of one cycle in connection order, or ``[]`` when the graph is acyclic."""
    after: dict[str, list[str]] = {n.id: [] for n in graph.nodes}
    for c in graph.connections:
        after.setdefault(c.from_node, []).append(c.to_node)
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in after.get(node, []):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        state[node] = 2
        path.pop()
        return []

    for start in after:
        if start not in state:
            found = visit(start)
            if found:
                return found
    return []
