"""Contracts of tools and toolboxes: what a tool is, what it returns, how toolboxes group them."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, SkipValidation, create_model

from nyla.models.agent import RunContext
from nyla.models.base import WireModel, assembled
from nyla.models.chat import ChatWorkflow
from nyla.models.tool_services import NoServices, PlaceholderSession, ToolServices


class ToolErrorDetails(WireModel):
    """Structured repair hints for the model (seeds: ``errorDetails``)."""

    code: str
    field: str | None = None
    suggestion: str | None = None
    hint: str | None = None


class ToolResult(WireModel):
    """What a tool returns. Errors are values here, never exceptions out of the loop."""

    success: bool = True
    content: str = ""
    data: Any = None
    error: str | None = None
    error_details: ToolErrorDetails | None = None

    @classmethod
    def ok(cls, content: str = "", data: Any = None) -> ToolResult:
        """A success. Validated as ``cls(...)`` validates it (a content that is no string
        is refused), by the model's validator directly as ``model_validate`` does: the
        Python ``__init__`` and keyword packing were a fifth of the cost, once per tool
        call (a subclass, which may have an ``__init__`` of its own, is constructed)."""
        if cls is ToolResult:
            if type(content) is str:  # (nothing to check: assembled, see _assembled_ok)
                return _assembled_ok(content, data)
            return _validate_result({"success": True, "content": content, "data": data})
        return cls(success=True, content=content, data=data)

    @classmethod
    def fail(
        cls,
        error: str,
        code: str,
        field: str | None = None,
        suggestion: str | None = None,
        hint: str | None = None,
    ) -> ToolResult:
        """A failure with its repair hints (validated as :meth:`ok` is)."""
        if cls is ToolResult:
            return _validate_result(
                {
                    "success": False,
                    "error": error,
                    "error_details": {
                        "code": code,
                        "field": field,
                        "suggestion": suggestion,
                        "hint": hint,
                    },
                }
            )
        return cls(
            success=False,
            error=error,
            error_details=ToolErrorDetails(
                code=code, field=field, suggestion=suggestion, hint=hint
            ),
        )


#: ToolResult's own validator (what ``ToolResult(...)`` and ``model_validate`` run), looked up
#: once: the class attribute goes through pydantic's metaclass on every look-up. The model is
#: complete at import (no forward reference left), so no rebuild replaces it.
_validate_result: Callable[[dict[str, Any]], ToolResult] = (
    ToolResult.__pydantic_validator__.validate_python
)


def _assembled_ok(content: str, data: Any) -> ToolResult:
    """``ToolResult(success=True, content=content, data=data)`` for a ``str`` content, built
    as validation builds it (the fields in order, the three given set) without running it:
    a ``str`` passes the ``str`` field as it is and ``data`` is ``Any``. One per tool call:
    ~10k instructions validated, ~4k so (the tests compare it with the validated result)."""
    return assembled(
        ToolResult,
        {"success": True, "content": content, "data": data, "error": None, "error_details": None},
        {"success", "content", "data"},
    )


class ToolboxRequests(Protocol):
    """The run's toolboxes as ``requestToolbox`` uses them: activate one by id."""

    def request(self, toolbox_id: str, reason: str = "") -> ToolResult: ...


class ToolContext(BaseModel):
    """What a tool handler gets besides its arguments: the run context, the kernel's services
    as a tool may use them (``services``, a :class:`~nyla.models.tool_services.ToolServices`),
    and the run's remaining limits.

    A tool that spends money outside the run's own model calls (the ``ai`` toolbox, a
    sub-agent) reports it with :meth:`charge` so the run's budget covers it, and passes
    ``neutralization`` (the run's placeholder session) and ``model`` (the run's model) on to
    what it starts. ``toolboxes`` and ``workflow`` are the run's toolbox session and chat
    workflow (``None`` when the run has none).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    run: RunContext = Field(default_factory=RunContext)
    #: the kernel's services (not validated: any object with them will do); outside a run
    #: each raises :class:`~nyla.models.tool_services.ServiceUnavailableError` when used
    services: SkipValidation[ToolServices] = Field(default_factory=NoServices)
    run_id: str | None = None
    #: where a document the call produces is numbered in its chat workflow: ``round`` (the
    #: agent's round), ``task_number`` (the call's place in that round, from 1) and
    #: ``action_number`` (the action within that task: 1 for a tool call, the node's place
    #: in a workflow run); 0 where there is none
    round: int = 0
    task_number: int = 0
    action_number: int = 0
    call_id: str | None = None
    remaining_rounds: int | None = None
    remaining_budget_chf: float | None = None
    #: where :meth:`charge` reports to (the run's cost counter); ``None`` outside a run
    on_charge: Callable[[float], Any] | None = None
    #: the run's placeholder session (``nyla.ai.neutralize.NeutralizationSession``), passed on
    #: as is to the AI service and to sub-agents (not validated: the session is shared)
    neutralization: SkipValidation[PlaceholderSession] | None = None
    #: the run's model id (a sub-agent inherits it)
    model: str | None = None
    #: the run's toolboxes, for ``requestToolbox`` (``None``: none can be requested)
    toolboxes: SkipValidation[ToolboxRequests] | None = None
    #: the chat workflow the run works in: produced files are bound to it as documents
    workflow: SkipValidation[ChatWorkflow] | None = None

    def charge(self, chf: float | None) -> None:
        """Add ``chf`` spent on the run's behalf to the run's cost (nothing outside a run)."""
        if chf and self.on_charge is not None:
            self.on_charge(float(chf))


ToolHandler = Callable[..., Awaitable[Any]]


class Tool(BaseModel):
    """A tool: name the model sees, description, JSON schema of its arguments, ``read_only``
    flag (read-only calls may run concurrently) and an async handler.

    The handler is called as ``await handler(args, ctx)`` where ``args`` is an instance of
    ``args_model`` (validated) and ``ctx`` a :class:`ToolContext`. It returns a
    :class:`ToolResult` or any value (turned into a successful result).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str
    description: str
    parameters: dict[str, Any]
    args_model: type[BaseModel]
    handler: ToolHandler
    read_only: bool = False
    timeout_s: float | None = None
    toolbox: str | None = None
    #: offered to a top-level run only, never to a sub-agent (a run with a parent)
    top_level_only: bool = False

    @classmethod
    def from_model(
        cls,
        name: str,
        description: str,
        args_model: type[BaseModel],
        handler: ToolHandler,
        *,
        read_only: bool = False,
        timeout_s: float | None = None,
    ) -> Tool:
        """A tool whose arguments are the pydantic model ``args_model``."""
        schema = args_model.model_json_schema(by_alias=True)
        schema.pop("title", None)
        return cls(
            name=name,
            description=description,
            parameters=schema,
            args_model=args_model,
            handler=handler,
            read_only=read_only,
            timeout_s=timeout_s,
        )

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Awaitable[Any]],
        *,
        name: str | None = None,
        description: str | None = None,
        read_only: bool = False,
        timeout_s: float | None = None,
    ) -> Tool:
        """A tool from a typed async function ``fn(ctx: ToolContext, **typed_args)``.

        The JSON schema comes from the signature (every parameter but ``ctx``); the
        description from the docstring.
        """
        hints = get_type_hints(fn)
        fields: dict[str, Any] = {}
        for pname, param in inspect.signature(fn).parameters.items():
            if pname == "ctx":
                continue
            annotation = hints.get(pname, Any)
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[pname] = (annotation, default)
        tool_name = name or fn.__name__
        args_model = create_model(
            f"{tool_name}Args", __config__=ConfigDict(extra="forbid"), **fields
        )
        # An instance of the model itself holds exactly the parameters in its ``__dict__``
        # (no extra fields, so none else): passed as they are, not read one by one in a
        # comprehension (a frame of its own on 3.11, once per call: ~2.8k instructions).
        exact = args_model if set(args_model.model_fields) == set(fields) else None

        async def handler(args: BaseModel, ctx: ToolContext) -> Any:
            if type(args) is exact:
                return await fn(ctx, **args.__dict__)
            return await fn(ctx, **{k: getattr(args, k) for k in fields})

        return cls.from_model(
            tool_name,
            description or inspect.getdoc(fn) or tool_name,
            args_model,
            handler,
            read_only=read_only,
            timeout_s=timeout_s,
        )


#: ``Toolbox.feature_code`` of a toolbox that is on in a run of any feature instance
ANY_FEATURE = "*"


class Toolbox(BaseModel):
    """A group of tools the agent gets together (seeds: Toolbox Registry).

    ``default_active`` toolboxes are always on; ``requires_connection`` ones are on when the
    user has a connection to that service (or, for a list, to any of them: the e-mail
    toolbox works with Outlook and Gmail alike); ``feature_code`` ones belong to a feature
    (:data:`ANY_FEATURE`: to whichever feature instance the run works in).
    Any inactive toolbox can be requested at run time through ``requestToolbox``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    id: str
    label: str = ""
    description: str = ""
    tools: list[Tool] = Field(default_factory=list)
    default_active: bool = False
    requires_connection: str | list[str] | None = None
    feature_code: str | None = None
    #: on in every run of a feature that declares the graphical workflow editor
    #: (:func:`~nyla.models.feature.declares_graphical_editor`)
    graphical_editor: bool = False

    @property
    def connection_services(self) -> tuple[str, ...]:
        """The connector services whose connection switches the toolbox on (any of them)."""
        value = self.requires_connection
        if value is None:
            return ()
        return (value,) if isinstance(value, str) else tuple(value)
