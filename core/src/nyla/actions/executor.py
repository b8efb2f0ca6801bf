"""The one way an action runs: :class:`ActionExecutor` validates every call centrally
(required fields, reference objects to their ids, primitive coercion), checks the owned ids
it carries, and runs the handler under a deadline — for the agent's action tools, the host's
REST route and, later, workflow nodes alike."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from nyla.actions.bridge import (
    DocumentListError,
    bridge_result,
    check_can_change,
    resolve_document_list,
)
from nyla.actions.catalog import ActionCatalog, parameters_schema, reference_fields, tool_name
from nyla.actions.owned import check_owned
from nyla.agent.policy import BeforeCallHook, check_policy
from nyla.errors import BudgetExceeded
from nyla.models.actions import Action, ActionParams, ActionResult, Method, ObjectRef
from nyla.models.chat import ChatWorkflow
from nyla.models.tools import Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from nyla.db import Database

log = logging.getLogger("nyla.actions")

#: seconds an action may run when it names no timeout of its own
DEFAULT_TIMEOUT_S = 120.0

_REF = TypeAdapter(ObjectRef)


class ActionArgumentError(ValueError):
    """Arguments an action refuses; ``result`` is the repairable error a caller gets."""

    def __init__(self, result: ToolResult) -> None:
        super().__init__(result.error)
        self.result = result


def toolbox_id(method: str) -> str:
    """The toolbox holding a method's action tools."""
    return f"actions.{method}"


class RawArguments(BaseModel):
    """The arguments of an action tool as the model sent them (the executor validates)."""

    model_config = ConfigDict(extra="allow")


class ActionExecutor:
    """Validates and runs action calls, built with the catalog, the database the owned-id
    check reads and the plugins' ``nyla_before_tool_call`` policy hook (``before_call``)."""

    def __init__(
        self,
        catalog: ActionCatalog,
        db: Database | None,
        *,
        before_call: BeforeCallHook | None = None,
    ) -> None:
        self.catalog = catalog
        self._db = db
        self._before_call = before_call
        self._tools: dict[tuple[str, str], Tool] = {}

    def tool(self, method: str, action: str) -> Tool:
        """The tool ``{method}_{action}`` the agent gets (built once): its schema generated
        from the signature, a write (ordered barrier) when the action writes; its handler
        hands the raw arguments to :meth:`run`, the one place that validates them."""
        key = (method, action)
        if key not in self._tools:
            found = self.catalog.get(method, action)
            if found is None:
                raise KeyError(f"no action {method}.{action}")
            self._tools[key] = self._make_tool(*found)
        return self._tools[key]

    def _make_tool(self, method: Method, action: Action) -> Tool:
        method_name, action_name = method.name, action.name

        async def handler(args: RawArguments, ctx: ToolContext) -> ToolResult:
            # the agent's registry asked the policy hook for this very call already
            arguments = dict(args.model_extra or {})
            return await self.run(method_name, action_name, arguments, ctx, policy_checked=True)

        return Tool(
            name=tool_name(method_name, action_name),
            description=action.description,
            parameters=parameters_schema(action.params),
            args_model=RawArguments,
            handler=handler,
            read_only=not action.writes,
            # the executor's own deadline ends first and answers TIMEOUT as a result
            timeout_s=(action.timeout_s or DEFAULT_TIMEOUT_S) + 5.0,
            toolbox=toolbox_id(method_name),
        )

    def validate(
        self, method: str, action: str, arguments: Any, workflow: ChatWorkflow | None = None
    ) -> ActionParams:
        """The call's parameters, validated and coerced (document references resolved
        against ``workflow``, the caller's chat workflow); :class:`ActionArgumentError` (with
        the repairable result) when the action is unknown or the arguments do not fit."""
        found = self.catalog.get(method, action)
        if found is None:
            raise ActionArgumentError(
                ToolResult.fail(
                    f"no action {method}.{action}",
                    "UNKNOWN_ACTION",
                    suggestion="see nyla actions list or GET /api/automation2/catalog",
                )
            )
        params = found[1].params
        name = tool_name(method, action)
        if not isinstance(arguments, Mapping):
            raise ActionArgumentError(
                ToolResult.fail(
                    f"arguments of {name} must be an object, got {type(arguments).__name__}",
                    "INVALID_TYPE",
                )
            )
        coerced = _coerce_references(name, params, dict(arguments), workflow)
        try:
            return params.model_validate(coerced)
        except ValidationError as exc:
            raise ActionArgumentError(_invalid(name, params, exc)) from None

    async def run(
        self,
        method: str,
        action: str,
        arguments: Any,
        ctx: ToolContext,
        *,
        policy_checked: bool = False,
        refs_in_text: bool = True,
        message_id: str | None = None,
    ) -> ToolResult:
        """Run one action call, whichever way it comes (agent, workflow, REST): validate it,
        check its owned ids against ``ctx.run`` and the right to change the chat workflow its
        documents go to (``ctx.workflow``), refuse it when the budget
        (``ctx.remaining_budget_chf``) is spent, ask the policy hook (unless the caller did:
        ``policy_checked``), run the handler under its deadline, bind the files it produced
        to the workflow (:mod:`nyla.actions.bridge`; their references appended to the text
        unless ``refs_in_text`` is off, as a workflow node's is; bound under ``message_id``
        when given, replacing what was bound under it before). Every failure is a result."""
        try:
            params = self.validate(method, action, arguments, ctx.workflow)
        except ActionArgumentError as exc:
            return exc.result
        found = self.catalog.get(method, action)
        assert found is not None  # validate() refused unknown actions
        name = tool_name(method, action)
        refusal = await self._refusal(name, params, ctx)
        if refusal is None and not policy_checked and ctx.run.denied_services:
            # outside an agent run (REST, a workflow run's node) the registry did not ask
            # service access for this call: the one check it uses (nyla.access.run)
            from nyla.access.run import tool_refusal

            refusal = await tool_refusal(self.tool(method, action), params, ctx, self._db)
        if refusal is None and not policy_checked:
            raw = dict(arguments) if isinstance(arguments, Mapping) else {}
            refusal = await check_policy(self._before_call, self.tool(method, action), raw, ctx)
        if refusal is not None:
            return refusal
        result, documents = await _call(name, found[1], params, ctx)
        if not documents or not result.success:
            return result
        try:
            label = f"action:{method}.{action}"
            return await bridge_result(
                ctx,
                result,
                documents,
                label=label,
                refs_in_text=refs_in_text,
                message_id=message_id,
            )
        except LookupError as exc:
            return ToolResult.fail(f"{name}: a result document {exc}", "ACTION_FAILED")

    async def _refusal(
        self, name: str, params: ActionParams, ctx: ToolContext
    ) -> ToolResult | None:
        """Owned ids, the right to change the documents' workflow, and the budget."""
        refusal = await check_owned(name, params, ctx, self._db)
        if refusal is None and ctx.workflow is not None:
            refusal = await check_can_change(ctx.workflow.id, ctx.run, self._db)
        budget = ctx.remaining_budget_chf
        if refusal is None and budget is not None and budget <= 0:
            refusal = ToolResult.fail(
                f"{name}: the budget is spent (CHF {budget:g} left)",
                "BUDGET_EXCEEDED",
                suggestion="raise the budget (maxCostChf) or run it later",
            )
        return refusal


async def _call(
    name: str, action: Action, params: ActionParams, ctx: ToolContext
) -> tuple[ToolResult, list[str]]:
    """The handler's answer as a result, and the files it names as its documents."""
    timeout = action.timeout_s or DEFAULT_TIMEOUT_S
    try:
        value = await asyncio.wait_for(action.handler(params, ctx), timeout)
    except TimeoutError:
        return ToolResult.fail(f"{name} took longer than {timeout:g} s", "TIMEOUT"), []
    except BudgetExceeded as exc:  # the AI service's preflight against ctx's budget
        return ToolResult.fail(f"{name}: {exc}", "BUDGET_EXCEEDED"), []
    except Exception as exc:  # an action's failure is a result, never a crashed run
        log.warning("action %s failed", name, exc_info=True)
        failed = ToolResult.fail(f"{name} failed: {type(exc).__name__}: {exc}", "ACTION_FAILED")
        return failed, []
    if isinstance(value, ActionResult):
        return ToolResult.ok(value.text or "ok", data=value.data), list(value.documents)
    return _as_result(value), []


def _as_result(value: Any) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, BaseModel):
        return ToolResult.ok(value.model_dump_json(by_alias=True), data=value.model_dump())
    if value is None or isinstance(value, str):
        return ToolResult.ok(value or "ok")
    return ToolResult.ok(json.dumps(value, default=str), data=value)


def _coerce_references(
    name: str, params: type[BaseModel], arguments: dict[str, Any], workflow: ChatWorkflow | None
) -> dict[str, Any]:
    """``arguments`` with each reference object replaced by its id (a single value of a list
    parameter becomes a list of one); a file reference in any document form (see
    :func:`~nyla.actions.bridge.resolve_document_list`) becomes the file ids it names."""
    for field, wire, kind, many in reference_fields(params):
        key = wire if wire in arguments else field if field in arguments else None
        if key is None or arguments[key] is None:
            continue
        value = arguments[key]
        if kind == "file":
            arguments[key] = _file_ids(name, wire, many, value, workflow)
        elif many:
            items = value if isinstance(value, list | tuple) else [value]
            arguments[key] = [_ref_id(name, wire, kind, v) for v in items]
        else:
            arguments[key] = _ref_id(name, wire, kind, value)
    return arguments


def _file_ids(
    name: str, wire: str, many: bool, value: Any, workflow: ChatWorkflow | None
) -> list[str] | str:
    """The file ids a file parameter's value names (one for a single-file parameter)."""
    try:
        ids = resolve_document_list(value, workflow)
    except DocumentListError as exc:
        raise ActionArgumentError(
            ToolResult.fail(f"invalid arguments for {name}: {wire}: {exc}", exc.code, field=wire)
        ) from None
    if many:
        return ids
    if len(ids) != 1:
        raise ActionArgumentError(
            ToolResult.fail(
                f"invalid arguments for {name}: {wire} takes one document, got {len(ids)}",
                "INVALID_VALUE",
                field=wire,
                suggestion=f"pass one file id or docItem reference in {wire}",
            )
        )
    return ids[0]


def _ref_id(name: str, wire: str, kind: str, value: Any) -> Any:
    """The id of a reference object, or ``value`` as it is (an id; the model checks it)."""
    if not isinstance(value, Mapping):
        return value
    try:
        ref = _REF.validate_python(value)
    except ValidationError:
        ref = None
    if ref is None or ref.type != kind:
        raise ActionArgumentError(
            ToolResult.fail(
                f"invalid arguments for {name}: {wire} must be a {kind} id or "
                f'{{"type": "{kind}", "id": "..."}}, got {json.dumps(value, default=str)[:200]}',
                "INVALID_TYPE",
                field=wire,
                suggestion=f'pass the id, or {{"type": "{kind}", "id": "<id>"}}',
            )
        )
    return ref.id


def _invalid(name: str, params: type[BaseModel], exc: ValidationError) -> ToolResult:
    """The first validation error as a repairable result (one clear thing to fix)."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    loc = [str(p) for p in first.get("loc", ())]
    field = _wire_name(params, loc[0]) if loc else None
    path = ".".join([field or "", *loc[1:]]) if loc else None
    kind = first.get("type", "")
    if kind == "missing":
        code, suggestion = "MISSING_FIELD", f"add the required field '{path}'"
    elif kind == "extra_forbidden":
        allowed = ", ".join(sorted(parameters_schema(params).get("properties", {})))
        code, suggestion = "UNKNOWN_FIELD", f"remove '{path}'; allowed fields: {allowed}"
    elif kind.endswith("_type") or kind.endswith("_parsing"):
        code, suggestion = "INVALID_TYPE", f"'{path}' has the wrong type: {first.get('msg')}"
    else:
        code = "INVALID_VALUE"
        suggestion = f"fix '{path}' as the error says" if path else "fix the arguments"
    more = f" (+{len(errors) - 1} more problems)" if len(errors) > 1 else ""
    return ToolResult.fail(
        f"invalid arguments for {name}: {path + ': ' if path else ''}{first.get('msg')}{more}",
        code,
        field=path,
        suggestion=suggestion,
    )


def _wire_name(params: type[BaseModel], name: str) -> str:
    info = params.model_fields.get(name)
    return (info.alias or name) if info is not None else name
