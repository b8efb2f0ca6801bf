"""``nyla models allow`` and ``nyla models allowed``: the model allow-list per user and
mandate (see :mod:`nyla.ai.access`), stored in the database and enforced by the server."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from nyla.commands.output import emit_json, json_option, run_async, table

if TYPE_CHECKING:
    from nyla.ai.access import Kind


@click.command("allow")
@click.argument("model_ids", nargs=-1)
@click.option("--user", "user_id", default=None, help="The user the list is for.")
@click.option("--mandate", "mandate_id", default=None, help="The mandate the list is for.")
@click.option(
    "--provider",
    "providers",
    multiple=True,
    help="Allow only this provider (repeatable); every operation, embeddings included.",
)
@click.option("--all", "allow_all", is_flag=True, help="Remove the restriction (every model).")
@json_option
def allow(
    model_ids: tuple[str, ...],
    user_id: str | None,
    mandate_id: str | None,
    providers: tuple[str, ...],
    allow_all: bool,
    as_json: bool,
) -> None:
    """Let a user (--user) or everyone in a mandate (--mandate) use only MODEL_IDS and/or
    the providers named with --provider; with --all (and nothing else) every model and
    provider again. Ids are checked against the installed models and providers. The AI
    service enforces the entry on every call (sub-agents, embeddings and summaries too)."""
    from nyla.ai.access import AllowEntry
    from nyla.kernel import Kernel

    if (user_id is None) == (mandate_id is None):
        raise click.UsageError("name exactly one of --user U or --mandate M")
    if allow_all == bool(model_ids or providers):
        raise click.UsageError("name the models or --provider to allow, or --all for every model")
    kernel = Kernel()
    specs = kernel.plugins.models()
    unknown = [m for m in model_ids if m not in {s.id for s in specs}]
    unknown += [p for p in providers if p not in {s.provider for s in specs}]
    if unknown:
        raise click.ClickException(
            f"unknown model {', '.join(unknown)}; `nyla models list` shows the installed ones"
        )
    kind: Kind = "user" if user_id is not None else "mandate"
    subject = str(user_id if user_id is not None else mandate_id)

    async def go() -> Any:
        try:
            access = kernel.model_access
            if model_ids or allow_all:
                await access.set(kind, subject, list(model_ids))
            if providers or allow_all:
                await access.set_providers(kind, subject, list(providers))
            found = [e for e in await access.entries() if (e.kind, e.subject) == (kind, subject)]
            return found[0] if found else AllowEntry(kind=kind, subject=subject, models=[])
        finally:
            await kernel.aclose()

    entry = run_async(go())
    if as_json:
        emit_json(entry.to_wire())
    elif entry.models or entry.providers:
        shown = [*entry.models, *(f"provider {p}" for p in entry.providers)]
        click.echo(f"{kind} {subject} may use: {', '.join(shown)}")
    else:
        click.echo(f"{kind} {subject} may use every model")


@click.command("allowed")
@click.option("--user", "user_id", default=None, help="The models this user may use.")
@click.option(
    "--mandate", "mandate_id", default=None, help="... in this mandate (alone: its entry)."
)
@json_option
def allowed(user_id: str | None, mandate_id: str | None, as_json: bool) -> None:
    """The allow-list: every entry (only the mandate's with --mandate alone), or (with
    --user, and --mandate) what that user may use (both lists apply; no entry means every
    model)."""
    from nyla.kernel import Kernel

    kernel = Kernel()

    async def go() -> Any:
        try:
            if user_id is not None:
                specs = kernel.plugins.models()
                return await kernel.model_access.effective(user_id, mandate_id, specs)
            entries = await kernel.model_access.entries()
            return [
                e
                for e in entries
                if mandate_id is None or (e.kind == "mandate" and e.subject == mandate_id)
            ]
        finally:
            await kernel.aclose()

    result = run_async(go())
    if user_id is not None:
        if as_json:
            emit_json({"userId": user_id, "mandateId": mandate_id, "models": result})
        else:
            shown = "every model" if result is None else ", ".join(result) or "no model"
            click.echo(f"{user_id} may use: {shown}")
        return
    if as_json:
        emit_json([e.to_wire() for e in result])
        return
    table(
        "model allow-list",
        ["for", "id", "models", "providers"],
        [(e.kind, e.subject, ", ".join(e.models), ", ".join(e.providers)) for e in result],
    )
