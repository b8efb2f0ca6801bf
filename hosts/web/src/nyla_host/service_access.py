"""Service access on the host: routes that use the agent, the knowledge store or a connector
ask the kernel's one decider (``kernel.service_access``, see :mod:`nyla.access`) for the
caller. A refusal is a 403 whose JSON names the permission (``{"error":
"ServiceAccessDenied", "permission": "service.knowledge", "detail": ...}``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import Request

from nyla.host import AccessSubject, connector_permission
from nyla_host.auth import need_user
from nyla_host.identity import Identity, Role
from nyla_host.state import host

#: the permissions of the kernel's services, as their wire names
AGENT = "service.agent"
KNOWLEDGE = "service.knowledge"


def subject(identity: Identity) -> AccessSubject:
    """The access subject of a caller (user, mandate, role)."""
    return AccessSubject(identity.user_id, identity.mandate_id, identity.role.value)


async def check_service(request: Request, identity: Identity, permission: str) -> None:
    """Raise ``ServiceAccessDenied`` (answered 403) unless the caller may use it."""
    await host(request).kernel.service_access.check(subject(identity), permission)


async def check_connector(request: Request, identity: Identity, service: str) -> None:
    """:func:`check_service` for the connector of ``service``."""
    await check_service(request, identity, connector_permission(service))


def need_service(permission: str) -> Callable[..., Awaitable[Identity]]:
    """A dependency that admits signed-in users who may use ``permission`` (it declares the
    ``user`` role for the deny-by-default check)."""

    async def dependency(request: Request) -> Identity:
        identity = await need_user(request)
        await check_service(request, identity, permission)
        return identity

    dependency.__name__ = f"need_{permission.replace('.', '_')}"
    dependency.nyla_role = Role.USER  # type: ignore[attr-defined]
    return dependency
