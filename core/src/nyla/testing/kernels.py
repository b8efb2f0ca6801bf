"""A kernel, its connection service, its AI service and the test database, built for a
plugin's tests without naming the kernel's classes.

The fixtures (:mod:`nyla.testing.fixtures`) build these inside a test; the functions here are
the same set-ups for what a fixture cannot reach: a worker process of a race test (it opens
the parent's database by URL and schema), a module-level helper shared by several tests, a
connection service whose vendor, sleep and rate limiter the test injects. A plugin's tests
import them from ``nyla.testing``; the kernel's constructors may change behind them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nyla.ai.retry import RetryPolicy
    from nyla.ai.service import AiService
    from nyla.connections.limits import Limiter
    from nyla.connections.service import ConnectionService
    from nyla.db import Database
    from nyla.kernel import Kernel
    from nyla.plugins import PluginHost

Sleep = Callable[[float], Awaitable[None]]


def plugin_host(
    *plugins: Any, builtins: bool = False, names: Sequence[str] | None = None
) -> PluginHost:
    """The plugin host of exactly ``plugins`` (modules or objects with hook implementations; a
    :class:`~nyla.testing.scripted.ScriptedProvider` is wrapped as a plugin), plus the
    kernel's built-ins when ``builtins``. ``names`` are the plugins' names (by default a
    module's ``__name__``, an object's class name and position)."""
    from nyla.plugins import PluginHost
    from nyla.testing.scripted import ScriptedPlugin, ScriptedProvider

    wrapped = [ScriptedPlugin(p) if isinstance(p, ScriptedProvider) else p for p in plugins]
    if names is None:
        names = [
            getattr(p, "__name__", None) or f"{type(p).__name__.lower()}-{i}"
            for i, p in enumerate(wrapped)
        ]
    return PluginHost.from_plugins(wrapped, builtins=builtins, names=list(names))


def plugin_kernel(
    *plugins: Any,
    db: Database | None = None,
    builtins: bool = False,
    names: Sequence[str] | None = None,
    settings: dict[str, Any] | None = None,
) -> Kernel:
    """A kernel over exactly ``plugins`` (see :func:`plugin_host`) on ``db`` (the ``db``
    fixture, or :func:`open_database` in a worker process), with the kernel settings
    ``settings`` (``secret_key`` seals tokens, ``transport`` replaces the network, ``sleep``
    replaces waiting, ``jobs="procrastinate"`` queues jobs for ``nyla worker``)."""
    from nyla.kernel import Kernel

    host = plugin_host(*plugins, builtins=builtins, names=names)
    return Kernel(plugins=host, db=db, settings=settings)


def installed_kernel(db: Database, *, settings: dict[str, Any] | None = None) -> Kernel:
    """A kernel over every installed plugin and the built-ins, as a ``nyla`` command or a
    ``nyla worker`` process builds it, on ``db``."""
    from nyla.kernel import Kernel

    return Kernel(db=db, settings=settings)


def open_database(url: str, schema: str) -> Database:
    """The test database by its URL and schema (``db.url``, ``db.schema`` of the ``db``
    fixture, or the ``embedded_pg`` URL and a schema of the test's own), for a worker process
    or a test that runs ``nyla`` commands on a schema it names; dispose it when done."""
    from nyla.db import Database

    return Database(url, schema=schema)


def connection_service(
    *plugins: Any,
    db: Database,
    vendor: Callable[[Any], Any],
    secret_key: str | bytes | None = None,
    sleep: Sleep | None = None,
    limiter: Limiter | None = None,
    names: Sequence[str] | None = None,
) -> ConnectionService:
    """The connection service over exactly ``plugins`` (a connector, say) on
    ``db``, whose vendor HTTP goes to ``vendor`` (an httpx handler: the fake vendor) at the
    wire. Tokens are sealed with ``secret_key`` (a fresh key unless a worker process must
    share its parent's); ``sleep`` replaces waiting (retries, ``Retry-After``) and
    ``limiter`` the rate limiter (one on a fake clock, to test rate budgets)."""
    import httpx
    from cryptography.fernet import Fernet

    from nyla.connections.service import ConnectionService
    from nyla.knowledge.consent import purge_connection

    settings: dict[str, Any] = {
        "secret_key": secret_key if secret_key is not None else Fernet.generate_key(),
        "transport": httpx.MockTransport(vendor),
    }
    if sleep is not None:
        settings["sleep"] = sleep
    host = plugin_host(*plugins, names=names)
    return ConnectionService(
        db, host, purge_index=purge_connection, settings=settings, limiter=limiter
    )


def ai_service(
    *providers: Any,
    retry: RetryPolicy | None = None,
    settings: dict[str, Any] | None = None,
    name: str = "providers",
) -> AiService:
    """The AI service over exactly ``providers`` (provider objects: the plugin's own, a
    :class:`~nyla.testing.scripted.ScriptedProvider`), registered as one plugin ``name``,
    with ``retry`` (a :class:`~nyla.sdk.RetryPolicy` whose ``sleep`` the test records) and
    the AI settings ``settings`` (``max_attempts``, ``timeout_s``, ... as a kernel's
    ``settings["ai"]``)."""
    from nyla.ai.service import AiService
    from nyla.testing.scripted import ScriptedPlugin

    return AiService(plugin_host(ScriptedPlugin(*providers), names=[name]), settings, retry=retry)
