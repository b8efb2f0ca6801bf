"""``nyla ai ask`` (a one-off model call, with its cost) and ``nyla ai neutralize`` (what a
model would be sent)."""

from __future__ import annotations

import sys
from typing import Any

import click

from nyla.commands.output import emit_json, json_option, run_async, table


@click.group()
def ai() -> None:
    """One-off model calls and neutralization."""


def _kernel(*, governed: bool = True) -> Any:
    from nyla.kernel import Kernel

    # neutralizing calls no model: ungoverned (no model access rule, no bill) the kernel
    # needs no database for it, so the command starts no PostgreSQL
    return Kernel() if governed else Kernel(settings={"governance": False})


def _fail(exc: Exception) -> click.ClickException:
    from nyla.errors import ModelNotAvailableError

    message = str(exc)
    if isinstance(exc, ModelNotAvailableError):
        message += "\n`nyla models list` shows every model and what it needs (e.g. an API key)."
    return click.ClickException(message)


@ai.command("ask")
@click.argument("prompt")
@click.option("--model", "model", default=None, help="Model id (provider:model); else selected.")
@click.option(
    "--operation", "operation", default="dataAnalyse", show_default=True, help="Operation type."
)
@click.option("--system", "system", default=None, help="A system prompt.")
@click.option("--stream", "stream", is_flag=True, help="Print the answer as it arrives.")
@click.option(
    "--max-cost-chf", "max_cost", type=click.FloatRange(min=0), default=None, help="Budget in CHF."
)
@click.option("--stop", "stop", multiple=True, help="A stop sequence (repeatable).")
@click.option("--json-object", "json_object", is_flag=True, help="JSON mode: answer a JSON object.")
@click.option(
    "--schema",
    "schema",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Structured output: answer JSON following this JSON schema file.",
)
@click.option("--mandate", "mandate_id", default=None, help="The mandate the call is made in.")
@json_option
def ask(
    prompt: str,
    model: str | None,
    operation: str,
    system: str | None,
    stream: bool,
    max_cost: float | None,
    stop: tuple[str, ...],
    json_object: bool,
    schema: str | None,
    mandate_id: str | None,
    as_json: bool,
) -> None:
    """Send PROMPT to a model once and show the answer with model, tokens and cost (CHF).

    --stop, --json-object and --schema need a model declaring stop sequences, JSON mode or
    structured output; another model is refused before anything is sent.
    """
    from nyla.errors import NylaError
    from nyla.identity import default_user
    from nyla.models.agent import RunContext
    from nyla.models.ai import AiCallRequest, Message, OperationType, Role

    try:
        op = OperationType(operation)
    except ValueError:
        raise click.BadParameter(
            "one of: " + ", ".join(o.value for o in OperationType), param_hint="--operation"
        ) from None
    messages = [Message(role=Role.SYSTEM, content=system)] if system else []
    messages.append(Message(role=Role.USER, content=prompt))
    try:
        request = AiCallRequest(
            operation=op,
            messages=messages,
            model=model,
            max_cost_chf=max_cost,
            stop=list(stop),
            response_format=_response_format(json_object, schema),
            # the CLI's identity: its model access applies and the call is billed to it
            context=RunContext(user_id=default_user(), mandate_id=mandate_id),
        )
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    kernel = _kernel()

    async def go() -> Any:
        if stream and not as_json:
            final = None
            async for delta in kernel.ai.stream(request):
                if delta.kind == "text":
                    click.echo(delta.text, nl=False)
                elif delta.kind == "tool_call":
                    click.echo(f"\n[tool call {delta.tool_call.name} {delta.tool_call.arguments}]")
                elif delta.kind == "done":
                    final = delta.response
            click.echo()
            return final
        from rich.console import Console

        with Console(stderr=True).status("asking the model..."):
            return await kernel.ai.call(request)

    async def go_and_close() -> Any:
        try:
            return await go()
        finally:
            await kernel.aclose()  # the call's ledger row is written

    try:
        response = run_async(go_and_close())
    except NylaError as exc:
        raise _fail(exc) from exc
    if as_json:
        emit_json(response.to_wire())
        return
    if not stream:
        click.echo(response.content)
    _usage_table(response)


def _usage_table(response: Any) -> None:
    """Model, tokens, cost and fallbacks of one answer, as a table."""
    fallbacks = ", ".join(f.model for f in response.fallbacks) or "-"
    table(
        None,
        ["model", "input tokens", "output tokens", "cost CHF", "fell back from"],
        [
            (
                response.model,
                response.usage.input_tokens,
                response.usage.output_tokens,
                f"{response.cost_chf:.6f}",
                fallbacks,
            )
        ],
    )


def _response_format(json_object: bool, schema: str | None) -> Any:
    """``--json-object`` / ``--schema FILE`` as a ``ResponseFormat`` (``None``: plain text)."""
    import json
    from pathlib import Path

    from nyla.models.chat_options import ResponseFormat

    if json_object and schema:
        raise click.UsageError("--json-object and --schema exclude each other")
    if json_object:
        return ResponseFormat.json_object()
    if schema is None:
        return None
    path = Path(schema)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise click.BadParameter(f"{path} is not JSON: {exc}", param_hint="--schema") from None
    name = "".join(c if c.isalnum() or c in "_-" else "_" for c in path.stem)[:64] or "answer"
    return ResponseFormat.structured(name, document)


@ai.command("neutralize")
@json_option
def neutralize(as_json: bool) -> None:
    """Read text on stdin and print it as a model would receive it (personal data replaced
    by placeholders); with --json also the placeholder table."""
    from nyla.errors import NylaError

    text = sys.stdin.read()
    kernel = _kernel(governed=False)
    try:
        clean, session = kernel.ai.neutralize_text(text)
    except NylaError as exc:
        raise _fail(exc) from exc
    if as_json:
        emit_json({"text": clean, "placeholders": session.table()})
        return
    click.echo(clean, nl=False)
