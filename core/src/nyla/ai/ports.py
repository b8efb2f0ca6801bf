"""What the AI service is built with besides its settings, as a protocol: the plugin host
satisfies it, and the kernel hands it to the service (the service never sees the kernel)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class ProviderPlugins(Protocol):
    """The plugin host as the AI service reads it: providers, neutralizers, their models."""

    @property
    def providers(self) -> Mapping[str, Any]: ...

    @property
    def neutralizers(self) -> Mapping[str, Any]: ...

    def models(self) -> list[Any]: ...

    def owner_of(self, kind: str, key: str) -> str | None: ...


class Spending(Protocol):
    """Billing as the AI service uses it (:class:`nyla.billing.service.BillingService`
    satisfies it): the preflight before each operation and the cost after it."""

    async def admit(
        self,
        context: Any,
        operation: str,
        estimate_chf: float | None,
        budget_chf: float | None = None,
    ) -> str | None: ...

    def record(self, context: Any, charge: Any, hold_id: str | None = None) -> None: ...

    async def close_run(self, run_id: str) -> int: ...


class AccessRules(Protocol):
    """Model access as the AI service uses it (:class:`nyla.ai.access.ModelAccess`)."""

    async def rule(self, user_id: str | None, mandate_id: str | None) -> Any: ...
