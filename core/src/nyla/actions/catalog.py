"""The action catalog: every method and action the plugins contribute, with the node
definitions (the JSON schema of each signature) that the agent, the workflow editor and
``nyla actions list`` read."""

from __future__ import annotations

import functools
import types
from collections.abc import Iterator, Mapping
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel

from nyla.models.actions import Action, Method, Reference


def tool_name(method: str, action: str) -> str:
    """The tool an action becomes: ``{method}_{action}`` (seeds: ActionToolAdapter)."""
    return f"{method}_{action}"


def _reference(annotation: Any) -> tuple[str, bool] | None:
    """``(kind, many)`` when ``annotation`` is a reference, a list of them, or either optional."""
    origin = get_origin(annotation)
    if origin is Annotated:
        marks = [m for m in annotation.__metadata__ if isinstance(m, Reference)]
        return (marks[0].kind, False) if marks else _reference(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        found = [r for r in map(_reference, get_args(annotation)) if r is not None]
        return found[0] if found else None
    if origin in (list, tuple, set, frozenset):
        inner = [r for r in map(_reference, get_args(annotation)) if r is not None]
        return (inner[0][0], True) if inner else None
    return None


@functools.cache
def reference_fields(params: type[BaseModel]) -> tuple[tuple[str, str, str, bool], ...]:
    """``(field name, wire name, kind, many)`` of every reference parameter of ``params``."""
    found = []
    for name, info in params.model_fields.items():
        marks = [m for m in info.metadata if isinstance(m, Reference)]
        ref = (marks[0].kind, False) if marks else _reference(info.annotation)
        if ref is not None:
            found.append((name, info.alias or name, ref[0], ref[1]))
    return tuple(found)


def parameters_schema(params: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of an action's parameters (camelCase), generated from its model."""
    schema = params.model_json_schema(by_alias=True)
    schema.pop("title", None)
    return schema


class ActionCatalog:
    """Every contributed method and its actions, by name (built from the plugin host's
    ``methods`` registry; nothing else is a source of actions)."""

    def __init__(self, methods: Mapping[str, Method]) -> None:
        self._methods = methods

    def methods(self) -> list[Method]:
        """The methods, by name."""
        return [self._methods[name] for name in sorted(self._methods)]

    def actions(self) -> Iterator[tuple[Method, Action]]:
        """Every ``(method, action)`` pair, by method then action name."""
        for method in self.methods():
            for action in sorted(method.actions, key=lambda a: a.name):
                yield method, action

    def get(self, method: str, action: str) -> tuple[Method, Action] | None:
        """The method and action named so, or ``None``."""
        found = self._methods.get(method)
        if found is None:
            return None
        match = [a for a in found.actions if a.name == action]
        return (found, match[0]) if match else None

    def node_definitions(self) -> list[dict[str, Any]]:
        """One node definition per action (camelCase, JSON-ready): what a workflow node and
        an action tool are built from."""
        return [node_definition(method, action) for method, action in self.actions()]

    def to_wire(self) -> dict[str, Any]:
        """The catalog as ``GET /api/automation2/catalog`` and ``nyla actions list --json``
        answer it: the methods, each with its actions' node definitions."""
        return {
            "methods": [
                {
                    "name": method.name,
                    "description": method.description,
                    "featureCode": method.feature_code,
                    "actions": [
                        node_definition(method, a)
                        for a in sorted(method.actions, key=lambda a: a.name)
                    ],
                }
                for method in self.methods()
            ]
        }


def node_definition(method: Method, action: Action) -> dict[str, Any]:
    """The node definition of one action (camelCase, JSON-ready)."""
    return {
        "method": method.name,
        "action": action.name,
        "tool": tool_name(method.name, action.name),
        "description": action.description,
        "writes": action.writes,
        "output": action.output,
        "parameters": parameters_schema(action.params),
        "references": {
            wire: {"kind": kind, "many": many}
            for _name, wire, kind, many in reference_fields(action.params)
        },
    }
