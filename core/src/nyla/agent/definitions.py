"""What the model sees of a tool: one :class:`~nyla.models.ai.ToolDefinition` per tool,
shared by every run that offers it.

A run offers about fifty tools. Built anew for each run, their definitions were new objects
whose tokens the AI service counted again (the schema serialised and scanned: about 1 ms of
CPU per run); kept per tool, each is counted once (:func:`~nyla.ai.tokens.tool_tokens`).
"""

from __future__ import annotations

import weakref

from nyla.models.ai import ToolDefinition
from nyla.models.tools import Tool

#: id(tool) -> (weak reference to it, its name, description and schema then, definition)
_DEFINITIONS: dict[int, tuple[weakref.ref[Tool], str, str, int, ToolDefinition]] = {}
_DEFINITIONS_MAX = 4096


def definition(tool: Tool) -> ToolDefinition:
    """The definition of ``tool``: the one made before while its name, description and
    schema object are the same, else a new one."""
    hit = _DEFINITIONS.get(id(tool))
    if (
        hit is not None
        and hit[0]() is tool
        and hit[1] == tool.name
        and hit[2] == tool.description
        and hit[3] == id(tool.parameters)
    ):
        return hit[4]
    made = ToolDefinition(name=tool.name, description=tool.description, parameters=tool.parameters)
    if len(_DEFINITIONS) >= _DEFINITIONS_MAX:
        _DEFINITIONS.clear()
    _DEFINITIONS[id(tool)] = (
        weakref.ref(tool),
        tool.name,
        tool.description,
        id(tool.parameters),
        made,
    )
    return made
