"""The kernel's exceptions. Errors are values at the tool boundary; everywhere else they are
these exceptions, each with a message a user can act on."""

from __future__ import annotations


class NylaError(Exception):
    """Base class of every nyla error."""


class PluginError(NylaError):
    """A plugin could not be loaded or broke its contract (strict mode raises it)."""


class ConfigurationError(NylaError):
    """Something is not configured (a key, an endpoint, a database URL)."""


class DatabaseUnavailableError(NylaError):
    """The database cannot be reached or lacks pgvector."""


class DatabaseQueryError(NylaError):
    """A real query failure (not an empty result, which is ``[]``)."""


class FileAccessError(NylaError):
    """A file or folder does not exist or is not visible in the caller's scope."""


class ExtractionError(NylaError):
    """A file could not be read; the message says why."""


class FolderNotEmptyError(NylaError):
    """A folder still holds files or folders and ``recursive`` was not asked for."""


class BudgetExceeded(NylaError):
    """A call would exceed the remaining ``max_cost_chf`` (or its price is unknown)."""

    def __init__(
        self,
        message: str,
        *,
        estimated_chf: float | None = None,
        remaining_chf: float | None = None,
    ) -> None:
        super().__init__(message)
        self.estimated_chf = estimated_chf
        self.remaining_chf = remaining_chf


class SpendingRefused(BudgetExceeded):
    """Billing refused a call before it was made: the mandate may not spend, has no credit
    left, or the mandate's or user's monthly limit would be passed (``rule`` names which)."""

    def __init__(self, message: str, *, rule: str, estimated_chf: float | None = None) -> None:
        super().__init__(message, estimated_chf=estimated_chf)
        self.rule = rule


class NeutralizationError(NylaError):
    """Neutralization failed while the context requires it: the call is blocked, not sent."""


class ModelNotAvailableError(NylaError):
    """No model fits the request (operation, size, restrictions), or the one named is unknown."""


class ModelAccessDenied(ModelNotAvailableError):
    """The model access rule of the caller's mandate or user forbids the model (or every
    model that could answer); ``rule`` names the rule."""

    def __init__(self, message: str, *, rule: str) -> None:
        super().__init__(message)
        self.rule = rule


class UnsupportedCapabilityError(ModelNotAvailableError):
    """The request needs a capability (``tool_choice``, ``stop_sequences``, ``json_mode``,
    ``structured_output``) that the model named does not declare, or that no eligible model
    declares. Raised before any provider is called."""

    def __init__(self, message: str, *, capability: str, model: str | None = None) -> None:
        super().__init__(message)
        self.capability = capability
        self.model = model


class ProviderError(NylaError):
    """A provider call failed. ``retryable`` errors are retried and then fall back."""

    retryable: bool = False

    def __init__(
        self, message: str, *, provider: str | None = None, status_code: int | None = None
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.status_code = status_code


class ProviderAuthError(ProviderError):
    """Missing or rejected credentials; ``env_var`` names what to set."""

    def __init__(self, message: str, *, env_var: str | None = None, **kw) -> None:
        super().__init__(message, **kw)
        self.env_var = env_var


class ProviderBadRequestError(ProviderError):
    """The provider rejected the request as invalid (not retried)."""


class ProviderRateLimitError(ProviderError):
    """HTTP 429 / rate limited; ``retry_after`` seconds when the provider said so."""

    retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None, **kw) -> None:
        super().__init__(message, **kw)
        self.retry_after = retry_after


class ProviderServerError(ProviderError):
    """HTTP 5xx or an overloaded provider."""

    retryable = True


class ProviderTimeoutError(ProviderError):
    """The provider did not answer in time."""

    retryable = True


class InvalidQueryError(NylaError):
    """A search query that cannot be searched (empty, or nothing in it to embed)."""


class NotFoundError(NylaError):
    """A data source, connection or file does not exist."""


class PermissionDeniedError(NylaError):
    """The caller may not change this object."""
