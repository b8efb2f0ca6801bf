"""``nyla teams``: the Teams bot from the command line — its status, the tenants it serves,
its conversations, persistent directives and one-shot director prompts. The CLI is the
machine's operator (as for ``nyla tokens``): it sees every binding."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import click


def _with_bot(work: Callable[[Any], Awaitable[Any]]) -> Any:
    """Run ``work(bot)`` on the bot over a kernel of the installed plugins."""
    from nyla import ConfigurationError
    from nyla.host import Kernel

    async def go() -> Any:
        kernel = Kernel()
        try:
            feature = kernel.features.feature("teamsbot")
        except ConfigurationError as exc:
            raise click.ClickException(f"the Teams bot is not installed: {exc}") from exc
        from nyla_host.teams_access import agent_access

        bot = feature.open_bot(  # type: ignore[attr-defined]
            db=kernel.db, ai=kernel.ai, agent=kernel.agent, access=agent_access(kernel)
        )
        try:
            return await work(bot)
        finally:
            await bot.aclose()
            await kernel.db.dispose()

    try:
        return asyncio.run(go())
    except (ValueError, PermissionError) as exc:
        raise click.ClickException(str(exc)) from exc


def _echo(rows: Any, as_json: bool, lines: Callable[[], list[str]]) -> None:
    if as_json:
        click.echo(json.dumps(rows, indent=2, default=str))
        return
    for line in lines():
        click.echo(line)


_json = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")


@click.group("teams")
def teams() -> None:
    """The Teams bot: status, bindings, conversations, directives, director prompts."""


@teams.command("status")
@_json
def status(as_json: bool) -> None:
    """Configured or not, what is missing, and what is stored."""
    data = _with_bot(lambda bot: bot.status())
    data.pop("sinceStart", None)  # this process only just started
    data.pop("pending", None)

    def lines() -> list[str]:
        out = [f"configured: {'yes' if data['configured'] else 'no'}"]
        out += [f"missing: {m}" for m in data["missing"]]
        out += [f"{name}: {n}" for name, n in data["counts"].items()]
        return out

    _echo(data, as_json, lines)


@teams.group("bindings")
def bindings() -> None:
    """The Microsoft Entra tenants the bot serves, each for a mandate and a run-as user."""


@bindings.command("list")
@_json
def list_bindings(as_json: bool) -> None:
    """Every binding."""
    rows = [b.to_wire() for b in _with_bot(lambda bot: bot.store.bindings())]
    _echo(
        rows,
        as_json,
        lambda: (
            [
                f"{r['id']}  tenant {r['tenantId']}  mandate {r['mandateId']}  as {r['userId']}"
                for r in rows
            ]
            or ["no tenant is bound"]
        ),
    )


@bindings.command("add")
@click.argument("tenant_id")
@click.option("--mandate", "mandate_id", required=True, help="The nyla mandate it serves.")
@click.option("--user", "user_id", required=True, help="The nyla user the bot runs as.")
@_json
def add_binding(tenant_id: str, mandate_id: str, user_id: str, as_json: bool) -> None:
    """Serve TENANT_ID (a Microsoft Entra tenant id)."""
    binding = _with_bot(lambda bot: bot.store.add_binding(tenant_id, mandate_id, user_id, "cli"))
    _echo(binding.to_wire(), as_json, lambda: [f"bound {binding.tenant_id}: {binding.id}"])


@bindings.command("remove")
@click.argument("binding")
def remove_binding(binding: str) -> None:
    """Stop serving a tenant (its directives go, its transcript stays); BINDING is the
    binding's id or the tenant id."""

    async def work(bot: Any) -> bool:
        found = await _binding(bot, binding)
        return found is not None and bool(await bot.store.remove_binding(found.id))

    if not _with_bot(work):
        raise click.ClickException(f"no binding {binding}")
    click.echo(f"removed {binding}")


async def _binding(bot: Any, key: str) -> Any:
    """A binding by its id or its tenant id."""
    return await bot.store.binding(key) or await bot.store.binding_for_tenant(key)


@teams.command("conversations")
@_json
def conversations(as_json: bool) -> None:
    """The chats, channel threads and meeting chats the bot has been in."""

    async def work(bot: Any) -> list[Any]:
        ids = [b.id for b in await bot.store.bindings()]
        return await bot.store.conversations(ids) if ids else []

    rows = [c.to_wire() for c in _with_bot(work)]
    _echo(
        rows,
        as_json,
        lambda: (
            [f"{r['kind']:<9} {r['title'] or ''}  {r['id']}" for r in rows] or ["no conversations"]
        ),
    )


@teams.group("directives")
def directives() -> None:
    """Persistent operator directives, rendered into every answer's context."""


@directives.command("list")
@click.option("--conversation", "conversation_id", default=None, help="Those applying here.")
@_json
def list_directives(conversation_id: str | None, as_json: bool) -> None:
    """The directives (of every binding, or those applying to one conversation)."""

    async def work(bot: Any) -> list[Any]:
        ids = [b.id for b in await bot.store.bindings()]
        return await bot.store.directives(ids, conversation_id) if ids else []

    rows = [d.to_wire() for d in _with_bot(work)]
    _echo(
        rows,
        as_json,
        lambda: (
            [
                f"{r['id']}  [{r['conversationId'] or 'every conversation'}]  {r['text']}"
                for r in rows
            ]
            or ["no directives"]
        ),
    )


@directives.command("add")
@click.argument("text")
@click.option("--conversation", "conversation_id", default=None, help="Only this conversation.")
@click.option(
    "--binding",
    "binding_id",
    default=None,
    help="Every conversation of a binding (its id or the tenant id).",
)
@_json
def add_directive(
    text: str, conversation_id: str | None, binding_id: str | None, as_json: bool
) -> None:
    """Keep TEXT as a persistent directive."""

    async def work(bot: Any) -> Any:
        target = binding_id
        if conversation_id is not None:
            conversation = await bot.store.conversation(conversation_id)
            if conversation is None:
                raise ValueError(f"no conversation {conversation_id}")
            target = conversation.binding_id
        binding = await _binding(bot, target) if target else None
        if binding is None:
            raise ValueError("name --conversation or --binding (an existing one)")
        return await bot.add_directive(binding, text, "cli", conversation_id)

    directive = _with_bot(work)
    _echo(directive.to_wire(), as_json, lambda: [f"kept {directive.id}"])


@directives.command("remove")
@click.argument("directive_id")
def remove_directive(directive_id: str) -> None:
    """Drop a directive."""
    if not _with_bot(lambda bot: bot.store.remove_directive(directive_id)):
        raise click.ClickException(f"no directive {directive_id}")
    click.echo(f"removed {directive_id}")


@teams.command("direct")
@click.argument("conversation_id")
@click.argument("prompt")
def direct(conversation_id: str, prompt: str) -> None:
    """A one-shot director prompt: the agent answers in the conversation now."""

    async def work(bot: Any) -> None:
        conversation = await bot.store.conversation(conversation_id)
        if conversation is None:
            raise ValueError(f"no conversation {conversation_id}")
        await bot.direct(conversation, prompt, wait=True)

    _with_bot(work)
    click.echo("delivered")
