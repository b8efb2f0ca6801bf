"""The tool registry of a run: the tools the model sees, argument validation and dispatch.

Dispatch never raises into the loop. Unparseable JSON, a wrong type, a missing or unknown
field, an unknown tool, a policy denial, a timeout or an exception in a handler all come back
as ``ToolResult(success=False, error=..., error_details={code, field, suggestion, hint})`` so
the model can repair its call in the next round.

Execution order within one model turn: consecutive read-only calls form a batch whose calls
are checked in the model's order (arguments, owned ids, repeats, policy) and whose handlers
then run concurrently, each in its own task under its own hard deadline, awaited together; a
writing call is a barrier that runs alone, in the order the model gave. Results come back in
the model's order, each under its own call id.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import operator
from collections.abc import AsyncGenerator, Awaitable, Callable, Hashable, Iterable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from nyla.agent.authorize import authorize, owned_fields
from nyla.agent.batches import BatchRunner, Dispatched
from nyla.agent.cancel import CancelScope, race
from nyla.agent.definitions import definition
from nyla.agent.guard import (
    MAX_RESULT_CHARS,
    ToolRun,
    ToolTimedOut,
    clean_text,
    run_is_cancelled,
    safe_json,
    safe_str,
)
from nyla.agent.policy import BeforeCallHook, first_denial, policy_failed
from nyla.agent.policy import before_call_hook as before_call_hook
from nyla.connections.redact import redact_paths
from nyla.models.ai import ToolCall, ToolDefinition
from nyla.models.tools import Tool, ToolContext, ToolResult
from nyla.text import loads_json, scan_json

if TYPE_CHECKING:
    from nyla.db import Database

log = logging.getLogger(__name__)

#: How many characters of malformed input are echoed back to the model.
EXCERPT_CHARS = 200
#: From this many identical earlier calls on, a call is not executed again.
REPEAT_LIMIT = 2


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` cut to ``limit`` characters with a marker of what was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters]"


def result_text(result: ToolResult) -> str:
    """The text the model sees for a tool result (errors as JSON with their repair hints);
    total: any data gives a text, cut to :data:`~nyla.agent.guard.MAX_RESULT_CHARS`."""
    if result.success:
        if result.content:
            return clean_text(result.content, MAX_RESULT_CHARS)
        if result.data is None:
            return "ok"
        text = safe_json(result.data)
        return clean_text(
            text if text is not None else "ok (data not serialisable)", MAX_RESULT_CHARS
        )
    body: dict[str, Any] = {"success": False, "error": result.error}
    if result.error_details is not None:
        body["errorDetails"] = result.error_details.model_dump(
            mode="json", by_alias=True, exclude_none=True
        )
    return json.dumps(body, ensure_ascii=False, default=str)


#: one encoder for every key (``json.dumps`` with options builds a new encoder per call)
_KEY_ENCODER = json.JSONEncoder(sort_keys=True, default=safe_str)
_SCALARS = (str, int, float, bool, type(None))


def safe_json_key(arguments: Any) -> str:
    """A stable key of the arguments for repeat detection (any value, never raises)."""
    try:
        return _KEY_ENCODER.encode(arguments)
    except (ValueError, TypeError, RecursionError):
        return safe_str(arguments)[:10_000]


def repeat_key(tool: str, arguments: dict[str, Any]) -> Hashable:
    """The key under which identical calls of ``tool`` are counted: for the usual flat
    arguments one tuple of the tool and each argument's name, type and value, sorted by name
    (a quarter of the JSON key's cost, and one object a call keeps, not one per argument; the
    type keeps ``1``, ``1.0`` and ``true`` apart as JSON does), else the tool and
    :func:`safe_json_key` (two items: never the length of a flat key)."""
    flat: list[Any] = [tool]
    for name in sorted(arguments):
        value = arguments[name]
        kind = type(value)
        if kind not in _SCALARS:
            return (tool, safe_json_key(arguments))
        flat += (name, kind, value)
    return tuple(flat)


def _to_result(value: Any) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    if value is None:
        return ToolResult.ok("ok")
    if isinstance(value, str):
        return ToolResult.ok(value)
    if isinstance(value, BaseModel):
        return ToolResult.ok(value.model_dump_json(by_alias=True), data=value.model_dump())
    text = safe_json(value)
    if text is None:
        return ToolResult.ok(clean_text(safe_str(value), MAX_RESULT_CHARS))
    return ToolResult.ok(text, data=value)


def _validation_result(tool: Tool, exc: ValidationError) -> ToolResult:
    """The first pydantic error as a repairable result (one clear thing to fix at a time)."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    field = ".".join(str(p) for p in first.get("loc", ())) or None
    kind = first.get("type", "")
    props = tool.parameters.get("properties", {})
    expected = props.get(field.split(".")[0], {}) if field else {}
    if kind == "missing":
        code, suggestion = "MISSING_FIELD", f"add the required field '{field}'"
    elif kind == "extra_forbidden":
        code = "UNKNOWN_FIELD"
        suggestion = f"remove '{field}'; allowed fields: {', '.join(sorted(props)) or 'none'}"
    elif kind in ("literal_error", "enum"):
        code, suggestion = "INVALID_VALUE", f"use one of the allowed values for '{field}'"
    elif not (kind.endswith("_type") or kind.endswith("_parsing")):
        code = "INVALID_VALUE"  # constraint or model-level rule (too short, out of range, ...)
        suggestion = f"fix '{field}' as the error says" if field else "fix the arguments"
    else:
        code = "INVALID_TYPE"
        want = expected.get("type") or expected.get("anyOf") or "see schema"
        suggestion = f"'{field}' must be {json.dumps(want)}"
    more = f" (+{len(errors) - 1} more problems)" if len(errors) > 1 else ""
    return ToolResult.fail(
        f"invalid arguments for {tool.name}: {first.get('msg')}{more}",
        code,
        field=field,
        suggestion=suggestion,
        hint=f"arguments schema: {json.dumps(tool.parameters, ensure_ascii=False)}",
    )


def _parse_arguments(tool: Tool, call: ToolCall) -> dict[str, Any] | ToolResult:
    """The call's arguments as a dict, or the structured error the model gets instead."""
    raw = call.arguments if call.arguments is not None else ""
    try:
        arguments = loads_json(raw) if raw.strip() else {}
    except RecursionError:
        return ToolResult.fail(
            f"arguments of {tool.name} are nested too deeply",
            "INVALID_JSON",
            suggestion="send a flat JSON object matching the schema",
        )
    except (json.JSONDecodeError, TypeError) as exc:
        return ToolResult.fail(
            f"arguments of {tool.name} are not valid JSON ({exc.msg} at position "
            f"{exc.pos}): {excerpt(raw)}"
            if isinstance(exc, json.JSONDecodeError)
            else f"arguments of {tool.name} are not valid JSON: {excerpt(str(raw))}",
            "INVALID_JSON",
            suggestion="send the arguments as one JSON object matching the schema",
            hint=f"arguments schema: {json.dumps(tool.parameters, ensure_ascii=False)}",
        )
    if not isinstance(arguments, dict):
        return ToolResult.fail(
            f"arguments of {tool.name} must be a JSON object, got "
            f"{type(arguments).__name__}: {excerpt(raw)}",
            "INVALID_JSON",
            suggestion="wrap the arguments in an object",
            hint=f"arguments schema: {json.dumps(tool.parameters, ensure_ascii=False)}",
        )
    return arguments


#: per arguments model, its own validator (see :func:`_validator`)
_VALIDATORS: dict[type[BaseModel], Callable[[Any], BaseModel]] = {}
_MODEL_VALIDATE = BaseModel.model_validate.__func__  # type: ignore[attr-defined]


def _validator(args_model: type[BaseModel]) -> Callable[[Any], BaseModel]:
    """How a call's arguments are validated: ``args_model.model_validate``, or, where that is
    pydantic's own and the model complete, the validator it calls, called directly (the
    same validation; ``model_validate``'s Python frame was ~45 % of it, once per call).
    Kept per model (cleared when full, as a process may make models for its MCP tools)."""
    if args_model.__pydantic_complete__ and (
        getattr(args_model.model_validate, "__func__", None) is _MODEL_VALIDATE
    ):
        validate: Callable[[Any], BaseModel] = args_model.__pydantic_validator__.validate_python
        if len(_VALIDATORS) >= 1024:
            _VALIDATORS.clear()
        _VALIDATORS[args_model] = validate
        return validate
    return args_model.model_validate


def _outcome(tool: Tool, run: ToolRun) -> ToolResult:
    """What the handler's run came to, as a result."""
    try:
        value = run.outcome()
    except ToolTimedOut as exc:
        return exc.result(tool.name, run.timeout)
    except Exception as exc:
        message = safe_str(exc)[:2000]
        log.warning("tool %s raised %s: %s", tool.name, type(exc).__name__, message)
        shown = redact_paths(message)  # the model never learns where the server's files are
        return ToolResult.fail(f"{tool.name} failed: {type(exc).__name__}: {shown}", "TOOL_ERROR")
    try:
        return _to_result(value)
    except Exception as exc:  # a value that even the conversion chokes on
        return ToolResult.fail(f"{type(exc).__name__}: {safe_str(exc)[:500]}", "TOOL_ERROR")


class ToolRegistry:
    """The tools of one run, by name, with validating dispatch.

    ``before_call`` is the ``nyla_before_tool_call`` hook (or any callable returning a list of
    optional denials); ``default_timeout_s`` applies to tools without their own timeout;
    owned ids are checked in ``database`` (without one, refused).
    """

    def __init__(
        self,
        tools: Iterable[Tool] = (),
        *,
        before_call: BeforeCallHook | None = None,
        default_timeout_s: float = 120.0,
        database: Database | None = None,
    ) -> None:
        self._tools: dict[str, Tool] = {}
        self._given: list[Tool] = []
        self._definitions: list[ToolDefinition] | None = None
        self.before_call, self.database = before_call, database
        self.default_timeout_s = default_timeout_s
        self._seen: dict[Hashable, int] = {}
        self.refresh(tools)

    def refresh(self, tools: Iterable[Tool]) -> None:
        """Replace the tool set (after ``requestToolbox`` activated more)."""
        tools = list(tools)
        given = self._given
        if len(tools) == len(given) and all(map(operator.is_, tools, given)):
            return  # the same tools as last round (asked every round: one pass in C)
        self._given = tools
        self._tools = {t.name: t for t in tools}
        self._definitions = None

    def get(self, name: str) -> Tool | None:
        """The tool called ``name`` or ``None``."""
        return self._tools.get(name)

    @property
    def names(self) -> list[str]:
        """Names of the tools the model may call."""
        return list(self._tools)

    def definitions(self) -> list[ToolDefinition]:
        """What the model sees of the tools."""
        if self._definitions is None:
            self._definitions = [definition(t) for t in self._tools.values()]
        return list(self._definitions)

    def is_read_only(self, call: ToolCall) -> bool:
        """Whether a call may run concurrently with its read-only neighbours."""
        tool = self._tools.get(call.name)
        return bool(tool and tool.read_only)

    # ---- dispatch ------------------------------------------------------------------------

    async def dispatch(self, call: ToolCall, ctx: ToolContext) -> Dispatched:
        """Validate and run one call; every failure is a result, never an exception."""
        return (await self.dispatch_batch([call], lambda _call: ctx))[0]

    async def dispatch_batch(
        self, calls: list[ToolCall], ctx_for: Callable[[ToolCall], ToolContext]
    ) -> list[Dispatched]:
        """Check ``calls`` in order, then run the passed ones together; results in order."""
        runner = self._runner()
        return await runner.finish(runner.start(await runner.checked(calls, ctx_for)))

    def _runner(self) -> BatchRunner:
        return BatchRunner(self._safe_check, _outcome, self.is_read_only, self.default_timeout_s)

    async def _safe_check(self, call: ToolCall, ctx: ToolContext) -> ToolResult | tuple[Tool, Any]:
        """Everything before the handler runs: known tool, JSON, schema, owned ids, service
        access, repeats, policy. A refusal as a result, or the tool and its validated
        arguments. A failure in the checks is the call's result, not the run's end (only the
        run's own cancel propagates). (One coroutine: a layer per step cost a call ~4k
        instructions.)"""
        try:
            tool = self._tools.get(call.name)
            if tool is None:
                return self._unknown(call)
            raw, arguments = call.arguments, None
            try:  # the usual compact object, read by json's C scanner alone (~4.5k
                # instructions a call less); anything else, and any failure, the old way
                if raw[0] == "{" and raw[-1] == "}":
                    value, end = scan_json(raw, 0)
                    if end == len(raw):  # (an object's scan gives a dict)
                        arguments = value
            except Exception:
                pass
            if arguments is None:
                arguments = _parse_arguments(tool, call)
                if isinstance(arguments, ToolResult):
                    return arguments
            try:
                validate = _VALIDATORS.get(tool.args_model) or _validator(tool.args_model)
                args = validate(arguments)
            except ValidationError as exc:
                return _validation_result(tool, exc)
            except (RecursionError, ValueError, TypeError) as exc:
                return ToolResult.fail(
                    f"invalid arguments for {tool.name}: {type(exc).__name__}",
                    "INVALID_VALUE",
                    suggestion="send a flat JSON object matching the schema",
                )
            if owned_fields(type(args)):
                refusal = await authorize(tool, args, ctx, self.database)
                if refusal is not None:
                    return refusal
            if ctx.run.denied_services:  # a caller without some service (nyla.access)
                from nyla.access.run import tool_refusal

                refusal = await tool_refusal(tool, args, ctx, self.database)
                if refusal is not None:
                    return refusal
            key = repeat_key(tool.name, arguments)
            seen = self._seen.get(key, 0)
            self._seen[key] = seen + 1
            if seen >= REPEAT_LIMIT:
                return ToolResult.fail(
                    f"{tool.name} was already called {seen} times with exactly these "
                    "arguments; the result will not change",
                    "REPEATED_CALL",
                    suggestion="use the earlier result, change the arguments or answer now",
                )
            before_call = self.before_call
            if before_call is not None:  # the first denial of the policy hook's answers
                try:  # (check_policy inline: no coroutine when every policy allowed)
                    answers = before_call(tool, arguments, ctx)
                    allowed = not answers
                except Exception as exc:
                    return policy_failed(tool, exc)
                if not allowed:
                    denial = await first_denial(answers, tool)
                    if denial is not None:
                        return denial
            return (tool, args)
        except asyncio.CancelledError:
            if run_is_cancelled():
                raise
            return ToolResult.fail("the tool was cancelled from inside", "TOOL_ERROR")
        except Exception as exc:  # a bug in dispatch itself must not kill the run
            log.warning("dispatch of %s failed: %s", call.name, type(exc).__name__)
            return ToolResult.fail(f"{type(exc).__name__}: {safe_str(exc)[:500]}", "TOOL_ERROR")

    def _unknown(self, call: ToolCall) -> ToolResult:
        return ToolResult.fail(
            f"unknown tool {call.name!r}",
            "UNKNOWN_TOOL",
            suggestion=f"call one of: {', '.join(sorted(self._tools)) or 'no tools'}",
            hint="an inactive toolbox can be activated with requestToolbox"
            if "requestToolbox" in self._tools
            else None,
        )

    def execute(
        self,
        calls: list[ToolCall],
        ctx_for: Callable[[ToolCall], ToolContext],
        cancel: asyncio.Event | CancelScope | None = None,
        announce: bool = False,
        read_only: list[bool] | None = None,
    ) -> AsyncGenerator[list[Dispatched], None]:
        """Run one model turn's calls: runs of consecutive read-only calls concurrently, every
        other call alone in the model's order (see :mod:`nyla.agent.batches`). Yields each
        batch's results in call order (with ``announce``, first an empty list once the first
        batch is running); ``cancel`` set by the caller stops the batch in flight
        (:class:`RunCancelled`). Closing the generator early cancels what still runs.
        ``read_only`` (when given) gets each call's :meth:`is_read_only` flag, in call order,
        before the first batch is yielded (the caller need not look each call up again)."""
        if cancel is None:
            wait: Callable[[Awaitable[Any]], Awaitable[Any]] = _no_wait
            return self._runner().run_turn(calls, ctx_for, wait, announce, None, read_only)
        if isinstance(cancel, CancelScope):
            wait = cancel.wait
        else:
            wait = functools.partial(race, cancel=cancel)
        return self._runner().run_turn(calls, ctx_for, wait, announce, cancel.is_set, read_only)


def _no_wait(work: Awaitable[Any]) -> Awaitable[Any]:
    """The wait of a run nobody can cancel: the work itself (no coroutine around it)."""
    return work
