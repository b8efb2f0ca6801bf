"""``nyla access``: grant, revoke, clear and list who may use which service (the agent, the
knowledge store, each connector; see :mod:`nyla.access`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from nyla.commands.output import emit_json, json_option, run_async, table

if TYPE_CHECKING:
    from nyla.access.permissions import Kind


@click.group("access")
def access() -> None:
    """Who may use the agent, the knowledge store and each connector.

    A command refused for a missing permission exits with code 3 (other errors 1) and names
    the permission."""


def _who(fn: Any) -> Any:
    fn = click.option(
        "--role", "role", default=None, help="A role: user, mandate-admin, sysadmin."
    )(fn)
    fn = click.option("--mandate", "mandate_id", default=None, help="A mandate (everyone in it).")(
        fn
    )
    return click.option("--user", "user_id", default=None, help="A user.")(fn)


def _subject(user_id: str | None, mandate_id: str | None, role: str | None) -> tuple[Kind, str]:
    from nyla.access.permissions import parse_role

    named = [(k, v) for k, v in (("user", user_id), ("mandate", mandate_id), ("role", role)) if v]
    if len(named) != 1:
        raise click.UsageError("name exactly one of --user U, --mandate M or --role R")
    kind, value = named[0]
    if kind == "role":
        try:
            value = parse_role(str(value))
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--role") from None
    return kind, str(value)  # type: ignore[return-value]


def _permission(text: str) -> str:
    from nyla.access.permissions import parse_permission

    try:
        return parse_permission(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="PERMISSION") from None


def _change(permission: str, kind: Kind, subject: str, allowed: bool | None) -> Any:
    from nyla.kernel import Kernel

    kernel = Kernel()

    async def go() -> Any:
        try:
            if allowed is None:
                return await kernel.service_access.clear(kind, subject, permission)
            return await kernel.service_access.set(kind, subject, permission, allowed)
        finally:
            await kernel.aclose()

    return run_async(go())


def _set_command(name: str, allowed: bool, doc: str) -> click.Command:
    @click.argument("permission")
    @_who
    @json_option
    def command(
        permission: str,
        user_id: str | None,
        mandate_id: str | None,
        role: str | None,
        as_json: bool,
    ) -> None:
        kind, subject = _subject(user_id, mandate_id, role)
        rule = _change(_permission(permission), kind, subject, allowed)
        if as_json:
            emit_json(rule.to_wire())
        else:
            verb = "may" if allowed else "may not"
            click.echo(f"{kind} {subject} {verb} use {rule.permission}")

    command.__doc__ = doc
    return access.command(name)(command)


grant = _set_command(
    "grant",
    True,
    """Let a user, a mandate or a role use PERMISSION (service.agent, service.knowledge,
    service.connector or service.connector.<name>); a user's rule overrides its mandate's,
    a mandate's its role's.""",
)
revoke = _set_command(
    "revoke",
    False,
    """Stop a user, a mandate or a role from using PERMISSION (see `nyla access grant`).""",
)


@access.command("clear")
@click.argument("permission")
@_who
def clear(permission: str, user_id: str | None, mandate_id: str | None, role: str | None) -> None:
    """Remove a rule on PERMISSION: the next broader rule or the default decides again."""
    kind, subject = _subject(user_id, mandate_id, role)
    permission = _permission(permission)
    removed = _change(permission, kind, subject, None)
    click.echo(f"{'removed' if removed else 'no'} rule on {permission} for {kind} {subject}")


@access.command("list")
@click.option("--user", "user_id", default=None, help="Show what this user may use.")
@click.option("--mandate", "mandate_id", default=None, help="The mandate the user acts in.")
@click.option("--role", "role", default=None, help="The user's role.")
@json_option
def list_access(
    user_id: str | None, mandate_id: str | None, role: str | None, as_json: bool
) -> None:
    """The stored rules; with --user, what that user may use (each service and connector)."""
    from nyla.access.permissions import Subject, label, parse_role
    from nyla.access.service import service_permissions
    from nyla.kernel import Kernel

    kernel = Kernel()
    subject = None
    if user_id is not None:
        subject = Subject(user_id, mandate_id, parse_role(role) if role else None)

    async def go() -> tuple[list[Any], Any]:
        try:
            rules = await kernel.service_access.rules()
            grants = await kernel.service_access.grants(subject) if subject else None
            return rules, grants
        finally:
            await kernel.aclose()

    rules, grants = run_async(go())
    effective = []
    if grants is not None:
        permissions = service_permissions(kernel.plugins.connectors)
        effective = [(p, grants.allows(p), label(p)) for p in permissions]
    if as_json:
        body: dict[str, Any] = {"rules": [r.to_wire() for r in rules]}
        if grants is not None:
            body["effective"] = [{"permission": p, "allowed": a} for p, a, _ in effective]
        emit_json(body)
        return
    if grants is not None:
        rows = [(p, "yes" if a else "no", what) for p, a, what in effective]
        table(f"what {user_id} may use", ["permission", "allowed", "lets them"], rows)
    table(
        "service access rules (none: every role may use every service)",
        ["kind", "subject", "permission", "allowed"],
        [(r.kind, r.subject, r.permission, "grant" if r.allowed else "revoke") for r in rules],
    )
