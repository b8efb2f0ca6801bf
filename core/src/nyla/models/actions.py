"""Contracts of workflow methods and their typed actions (seeds: Typed Action Architecture).

A *method* (``ai``, ``context``, ``trustee``) groups *actions*; each action is a typed
signature — a pydantic model of its parameters (:class:`ActionParams`) — plus whether it
writes and a human description. An action that makes files returns an :class:`ActionResult`
naming them; they come back into the conversation as chat documents. The agent gets every
action as a tool ``{method}_{action}``, the workflow editor as a node; both call it through
the one executor (``nyla.actions``).

A parameter that names something owned is a *reference*: declared as
``Annotated[str, Reference("featureInstance")]`` (:data:`FeatureInstanceId`, :data:`FileId`),
it accepts the id or a reference object (``{"type": "featureInstance", "id": "..."}``,
:class:`FeatureInstanceRef`) on the wire, and the handler always gets the id.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, GetJsonSchemaHandler
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

#: the kinds of reference a parameter may carry (the owned-id kinds the kernel checks)
REFERENCE_KINDS = ("featureInstance", "file")

NAME = r"^[a-z][A-Za-z0-9]*$"


class Reference:
    """Marks a ``str`` parameter as the id of something owned, of ``kind`` (one of
    :data:`REFERENCE_KINDS`): the executor turns a reference object into its id, and the
    kernel checks the id against the run before the action runs."""

    def __init__(self, kind: str) -> None:
        if kind not in REFERENCE_KINDS:
            raise ValueError(f"unknown reference kind {kind!r} (kinds: {REFERENCE_KINDS})")
        self.kind = kind

    def __repr__(self) -> str:
        return f"Reference({self.kind!r})"

    def __get_pydantic_json_schema__(
        self, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        plain = handler(core_schema)
        description = plain.pop("description", None)
        as_object = {
            "type": "object",
            "properties": {
                "type": {"type": "string", "enum": [self.kind]},
                "id": {"type": "string"},
            },
            "required": ["type", "id"],
        }
        schema: dict[str, Any] = {"anyOf": [plain, as_object]}
        if description:
            schema["description"] = description
        return schema


class FeatureInstanceRef(BaseModel):
    """A reference to a feature instance (``{"type": "featureInstance", "id": ...}``)."""

    type: Literal["featureInstance"] = "featureInstance"
    id: str = Field(min_length=1)


class FileRef(BaseModel):
    """A reference to a file (``{"type": "file", "id": ...}``)."""

    type: Literal["file"] = "file"
    id: str = Field(min_length=1)


#: any reference object, told apart by its ``type``
ObjectRef = Annotated[FeatureInstanceRef | FileRef, Field(discriminator="type")]

#: a parameter holding a feature instance id (or a :class:`FeatureInstanceRef`)
FeatureInstanceId = Annotated[str, Reference("featureInstance")]
#: a parameter holding a file id (or a :class:`FileRef`)
FileId = Annotated[str, Reference("file")]


class ActionParams(BaseModel):
    """Base class of an action's parameters: snake_case in Python, camelCase on the wire,
    unknown fields refused, numbers accepted where text is expected."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        coerce_numbers_to_str=True,
    )


#: a parameter taking documents: file ids, file reference objects, or the run's chat
#: documents (``docItem:<id>``, ``docList:<label>``, ``{"id": ...}``, ``{"documents": [...]}``);
#: the handler gets the file ids (resolved in one place, :mod:`nyla.actions.bridge`)
DocumentList = list[FileId]


class ActionResult(BaseModel):
    """What an action may return instead of a ``ToolResult``: its text, its data, and the
    ids of the files it produced (``documents``). The kernel binds those to the caller's
    chat workflow as chat documents (one message, numbered by round, task and action) and
    tells the caller their ``docItem`` references."""

    text: str = ""
    data: Any = None
    documents: list[str] = Field(default_factory=list)


ActionHandler = Callable[[Any, Any], Awaitable[Any]]


class Action(BaseModel):
    """One typed action of a method: ``await handler(params, ctx)`` with ``params`` an
    instance of ``params`` (validated by the executor) and ``ctx`` a
    :class:`~nyla.models.tools.ToolContext`; returns a ``ToolResult`` or any value."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = Field(pattern=NAME)
    description: str = Field(min_length=1)
    params: type[ActionParams]
    handler: ActionHandler
    #: whether the action changes anything (then its tool is an ordered barrier)
    writes: bool = False
    timeout_s: float | None = None
    #: what a workflow node of this action hands on to a connected parameter: ``text`` (its
    #: result's text), ``json`` (its result's data), ``file`` or ``files`` (file ids)
    output: Literal["text", "json", "file", "files"] = "text"


class Method(BaseModel):
    """A workflow method: a named group of actions (seeds: ``methodAi``, ``methodTrustee``).
    ``feature_code``: the feature whose runs get its action tools (``None``: every run)."""

    name: str = Field(pattern=NAME)
    description: str = Field(min_length=1)
    actions: list[Action] = Field(default_factory=list)
    feature_code: str | None = None
