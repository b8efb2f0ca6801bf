"""How the Teams bot asks the kernel's service access (``kernel.service_access``) whether the
nyla user it runs as may use the agent (shared by the host's routes and ``nyla teams``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from nyla.host import AccessSubject


def agent_access(kernel: Any) -> Callable[[str, str | None, str], Awaitable[bool]]:
    """The bot's question: may (user, mandate) use ``permission``?"""

    async def allows(user_id: str, mandate_id: str | None, permission: str) -> bool:
        subject = AccessSubject(user_id, mandate_id)
        return bool(await kernel.service_access.allows(subject, permission))

    return allows
