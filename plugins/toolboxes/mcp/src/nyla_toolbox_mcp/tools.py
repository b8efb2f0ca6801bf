"""An MCP server's tools as nyla tools behind the same gate as a native one: the listed
schema checked before it is offered and each call's arguments validated against it,
strings neutralised on the way out and the answer neutralised on the way back (before any
model sees it), the server's time bound, read-only only when the server says so, and every
failure of the server — hanging, crashing, lying, flooding — a structured tool error."""

from __future__ import annotations

import json
import logging
import math
import re
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from nyla.sdk import Tool, Toolbox, ToolContext, ToolResult
from nyla_toolbox_mcp.errors import ServerTimeout, SignInRequired
from nyla_toolbox_mcp.servers import ListedTool, McpServer, ServerStore

if TYPE_CHECKING:
    # imported where a schema is checked: jsonschema and its referencing/rpds are ~3 MiB
    # every nyla command paid at plugin discovery, with no MCP server configured too
    import jsonschema

#: the most text of one answer that reaches the model
MAX_RESULT_CHARS = 50_000
#: the ``_meta`` key of a tool result under which a server reports the call's price
#: (MCP defines no cost field; ``_meta`` keys take a reverse-DNS prefix): ``{"amount":
#: 0.02, "currency": "CHF"}``
COST_KEY = "dev.nyla/cost"
#: the most one call may report (CHF); a larger price is taken for a lie and not booked
MAX_REPORTED_CHF = 100.0

log = logging.getLogger(__name__)


class McpArgs(BaseModel):
    """Whatever the model sent: checked against the server's schema in the handler (the
    listing is JSON Schema, not a pydantic model)."""

    model_config = ConfigDict(extra="allow")


def accept(listed: Any) -> ListedTool | str:
    """The tool as nyla offers it, or why it is refused (a schema that is not a valid JSON
    Schema of an object)."""
    schema = listed.input_schema
    if not _camel(listed.name):
        return "its name has no letter or digit"
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return "its input schema is not a JSON Schema of type object"
    import jsonschema

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        return f"its input schema is not valid JSON Schema: {exc.message}"
    hints = listed.annotations
    read_only = bool(hints is not None and hints.read_only_hint is True)
    return ListedTool(
        name=listed.name,
        description=listed.description or listed.name,
        input_schema=schema,
        read_only=read_only,
    )


def _camel(text: str) -> str:
    parts = [p for p in re.split(r"[^A-Za-z0-9]+", text) if p]
    return "".join(p if i == 0 else p[:1].upper() + p[1:] for i, p in enumerate(parts))


def tool_name(server: str, tool: str) -> str:
    """The name the model sees: ``mcp<Server>_<tool>`` in camel case (``mcpGithub_getIssue``
    for ``get_issue`` of server ``github``), within the vendors' 64 characters."""
    head = _camel(server)
    return f"mcp{head[:1].upper()}{head[1:]}_{_camel(tool)}"[:64]


def _neutral(value: Any, ctx: ToolContext) -> Any:
    """``value`` with every string neutralised (placeholders stable within the run)."""
    if isinstance(value, str):
        text, _ = ctx.services.ai.neutralize_text(
            value, context=ctx.run, session=ctx.neutralization
        )
        return text
    if isinstance(value, list):
        return [_neutral(v, ctx) for v in value]
    if isinstance(value, dict):
        return {k: _neutral(v, ctx) for k, v in value.items()}
    return value


def render(result: Any) -> str:
    """The text of a ``CallToolResult``: text blocks, structured content as JSON, other
    blocks named by their type; ``ValueError`` if it is not one."""
    blocks = getattr(result, "content", None)
    if not isinstance(blocks, list):
        raise ValueError("the server's answer has no content list")
    parts: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", "unknown")
        parts.append(block.text if kind == "text" else f"[{kind} content omitted]")
    structured = getattr(result, "structured_content", None)
    if structured is not None and not parts:
        parts.append(json.dumps(structured, ensure_ascii=False, default=str))
    return "\n".join(parts)


def reported_cost(result: Any) -> float | None:
    """The price in CHF the server reported in the result's ``_meta`` (:data:`COST_KEY`);
    ``None`` when it reported none, or one nyla cannot take (another currency, not a
    finite number from 0 to :data:`MAX_REPORTED_CHF`)."""
    meta = getattr(result, "meta", None)
    cost = meta.get(COST_KEY) if isinstance(meta, dict) else None
    if cost is None:
        return None
    amount = cost.get("amount") if isinstance(cost, dict) else None
    currency = str(cost.get("currency", "CHF")).upper() if isinstance(cost, dict) else None
    if (
        currency != "CHF"
        or isinstance(amount, bool)
        or not isinstance(amount, int | float)
        or not math.isfinite(amount)
        or not 0 <= amount <= MAX_REPORTED_CHF
    ):
        log.warning("an MCP server reported a cost nyla cannot book: %.200r", cost)
        return None
    return float(amount)


def _book(server: McpServer, listed: ListedTool, result: Any, ctx: ToolContext) -> None:
    """Book the price the server reported: in the ledger (through the AI service) and on
    the run's budget."""
    cost = reported_cost(result)
    if not cost:
        return
    ctx.services.ai.record_cost(
        cost,
        context=ctx.run,
        operation="mcpTool",
        source=f"mcp:{server.name}",
        detail={"tool": listed.name},
    )
    ctx.charge(cost)


def _failure(server: McpServer, exc: BaseException) -> ToolResult:
    if isinstance(exc, SignInRequired):
        return ToolResult.fail(
            f"the MCP server {server.name!r} needs a sign-in ({exc.why})",
            "SIGN_IN_REQUIRED",
            suggestion=f"tell the user to sign in: `nyla mcp login {server.name}`, or Sign in "
            "on the MCP servers tab; continue without this tool meanwhile",
        )
    if isinstance(exc, ServerTimeout):
        what = "start" if exc.phase == "start" else "answer"
        return ToolResult.fail(
            f"the MCP server {server.name!r} did not {what} within {exc.seconds:g} s",
            "TIMEOUT",
            suggestion="try again later or without this tool",
        )
    return ToolResult.fail(
        f"the MCP server {server.name!r} failed: {type(exc).__name__}",
        "SERVER_ERROR",
        suggestion="the server may be down or misconfigured; continue without it",
    )


def _invalid(problem: jsonschema.ValidationError) -> ToolResult:
    path = ".".join(str(p) for p in problem.absolute_path)
    if problem.validator == "required":
        missing = next((str(n) for n in problem.validator_value if n not in problem.instance), None)
        field = f"{path}.{missing}" if path and missing else missing
        return ToolResult.fail(f"missing argument: {field}", "MISSING_FIELD", field=field)
    return ToolResult.fail(
        f"invalid arguments: {problem.message}", "INVALID_VALUE", field=path or None
    )


async def _call(
    server: McpServer, store: ServerStore, name: str, arguments: dict[str, Any], ctx: ToolContext
) -> Any:
    """Call ``name`` on ``server``; an OAuth server as the run's user (their sign-in)."""
    from nyla_toolbox_mcp.client import call_tool  # the MCP SDK loads on the first call

    if server.oauth is None:
        return await call_tool(server, name, arguments)
    from nyla_toolbox_mcp.oauth_session import authorized

    user_id = ctx.run.user_id or ""
    return await authorized(
        store.grants, user_id, server, lambda auth: call_tool(server, name, arguments, auth)
    )


def mcp_tool(server: McpServer, listed: ListedTool, store: ServerStore) -> Tool:
    """One listed tool as a nyla tool; a call runs on the run user's own server of that name,
    else on their mandate's."""

    import jsonschema

    validator = jsonschema.Draft202012Validator(listed.input_schema)

    async def handler(args: McpArgs, ctx: ToolContext) -> ToolResult:
        arguments = dict(args.model_extra or {})
        problem = next(validator.iter_errors(arguments), None)
        if problem is not None:
            return _invalid(problem)
        try:
            own = await store.resolve(ctx.run.user_id or "", ctx.run.mandate_id, server.name)
        except Exception as exc:  # the database is down: this tool, not the run
            return _failure(server, exc)
        if own is None or listed.name not in {t.name for t in own.tools}:
            return ToolResult.fail(
                f"no MCP server {server.name!r} with tool {listed.name!r} for this user",
                "NOT_AVAILABLE",
            )
        try:
            result = await _call(own, store, listed.name, _neutral(arguments, ctx), ctx)
            text = render(result)
        except Exception as exc:
            return _failure(own, exc)
        _book(own, listed, result, ctx)
        if len(text) > MAX_RESULT_CHARS:
            text = text[:MAX_RESULT_CHARS] + f"\n[truncated: {len(text)} characters in all]"
        text = _neutral(text, ctx)
        if getattr(result, "is_error", False):
            return ToolResult.fail(f"the tool reported an error: {text}", "TOOL_ERROR")
        return ToolResult.ok(text)

    schema = {k: v for k, v in listed.input_schema.items() if k != "$schema"}
    return Tool(
        name=tool_name(server.name, listed.name),
        description=f"[MCP {server.name}] {listed.description}",
        parameters=schema,
        args_model=McpArgs,
        handler=handler,
        read_only=listed.read_only,
        # the registry's bound sits just past the server's, so the server's is the one seen
        timeout_s=server.start_timeout_s + server.timeout_s + 5,
    )


def server_toolbox(server: McpServer, store: ServerStore) -> Toolbox:
    """The toolbox ``mcp:<name>`` of ``server``'s accepted tools."""
    return Toolbox(
        id=server.toolbox_id,
        label=f"MCP: {server.name}",
        description=f"Tools of the MCP server {server.name!r}.",
        tools=[mcp_tool(server, t, store) for t in server.tools],
    )
