"""The FastAPI app of ``nyla serve``, and :func:`mount` for host apps that bring their own.

At start-up the app makes sure the database is ready, marks runs a dead server left
``running`` as ``interrupted``, recovers interrupted jobs and starts the re-sync schedule of
the enabled data sources; at shutdown it stops the runs in progress (they end
``interrupted`` too)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, HTTPException
from fastapi.responses import FileResponse
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

import nyla_host.tables  # noqa: F401  (the host's tables join the kernel's metadata)
from nyla import NylaError
from nyla_host.auth import Authenticator, AuthHook
from nyla_host.errors import database_busy, internal_error, nyla_error, server_busy
from nyla_host.oidc import OidcSettings, OidcVerifier
from nyla_host.request_gate import RequestGate
from nyla_host.routes import api_router
from nyla_host.runs import RunManager
from nyla_host.start_gate import ServerBusy
from nyla_host.state import HostSettings, HostState
from nyla_host.tokens import REVOKED_CHANNEL, TokenStore

if TYPE_CHECKING:
    from nyla import Kernel

log = logging.getLogger(__name__)
WEB_DIR = Path(__file__).parent / "web"


def build_state(
    kernel: Kernel,
    *,
    settings: HostSettings | None = None,
    oidc: OidcSettings | OidcVerifier | None = None,
    auth_hooks: list[AuthHook] | None = None,
) -> HostState:
    """The host services over ``kernel``."""
    tokens = TokenStore(kernel.db)
    verifier = OidcVerifier(oidc) if isinstance(oidc, OidcSettings) else oidc
    return HostState(
        kernel=kernel,
        auth=Authenticator(tokens, verifier, auth_hooks),
        tokens=tokens,
        runs=RunManager(kernel),
        settings=settings or HostSettings(),
    )


async def startup(state: HostState) -> dict[str, int]:
    """Database ready; runs and jobs a dead server left behind recovered; revoked tokens
    heard of; the kernel's job runner (heartbeats, zombie killer) and the re-sync schedule
    started."""
    await state.kernel.db.ensure_ready()
    runs = await state.runs.recover_interrupted()
    # a token revoked through any host (or nyla tokens revoke) leaves this one's cache at once
    bus = state.kernel.runs.bus
    bus.listen(REVOKED_CHANNEL, state.tokens.forget)
    state.tokens.heard = bus.listening  # verified tokens kept longer while it hears
    jobs = await state.kernel.jobs.start()
    if runs or jobs:
        log.warning("recovered after a restart: %d interrupted runs, %d jobs", runs, jobs)
    # on procrastinate the workers' periodic task keeps the schedule instead
    if state.kernel.jobs_backend != "procrastinate":
        state.kernel.sync.scheduler.start()
    return {"runs": runs, "jobs": jobs}


async def shutdown(state: HostState) -> None:
    """Stop runs and jobs in progress (they end interrupted; the next start recovers them)
    and close the services routes opened (the Teams bot finishes or cancels its answers)."""
    await state.runs.aclose()
    for name, service in list(state.services.items()):
        close = getattr(service, "aclose", None)
        if close is not None:
            state.services.pop(name, None)
            await close()
    await state.kernel.sync.scheduler.aclose()
    await state.kernel.jobs.aclose()
    try:  # the ledger rows of calls not yet written (billing writes them in batches)
        await state.kernel.billing.flush(runs=True)
    except Exception as exc:
        log.error("ledger rows not written at shutdown: %s", exc)


def mount(app: FastAPI, state: HostState, *, security_headers: bool = True) -> None:
    """Add nyla's API routes, error mapping and middleware (:mod:`nyla_host.request_gate`:
    hostile input, the body limit, the request's timezone) to a host app's FastAPI app (its
    own lifespan must call :func:`startup` and :func:`shutdown`). With ``security_headers``
    every response of the app gets nyla's strict Content-Security-Policy and framing headers
    (where a route sets none itself); a host app serving pages of its own with inline script
    passes ``False`` and sets its own."""
    app.state.nyla = state
    # uploads are refused above the limit before they are read (1 MiB for the multipart frame)
    app.add_middleware(
        RequestGate,
        max_body_bytes=lambda: state.settings.max_upload_bytes + 2**20,
        security_headers=security_headers,
    )
    app.router.routes.extend(api_router().routes)
    app.add_exception_handler(NylaError, nyla_error)
    app.add_exception_handler(PoolTimeoutError, database_busy)
    app.add_exception_handler(ServerBusy, server_busy)
    app.add_exception_handler(Exception, internal_error)


def create_app(
    kernel: Kernel,
    *,
    settings: HostSettings | None = None,
    oidc: OidcSettings | OidcVerifier | None = None,
    auth_hooks: list[AuthHook] | None = None,
) -> FastAPI:
    """The whole host: API, the web page and its assets."""
    state = build_state(kernel, settings=settings, oidc=oidc, auth_hooks=auth_hooks)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await startup(state)
        try:
            yield
        finally:
            await shutdown(state)

    app = bare_app(lifespan=lifespan)
    mount(app, state)
    add_page(app)
    return app


def bare_app(**kw: Any) -> FastAPI:
    """A FastAPI app without the public docs routes (the schema is served, authenticated,
    at ``/api/openapi.json``)."""
    return FastAPI(
        title="nyla", version=_version(), openapi_url=None, docs_url=None, redoc_url=None, **kw
    )


def add_page(app: FastAPI) -> None:
    """The web page at ``/`` and its assets under ``/static/``."""

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        """The web page (its sign-in form is the first thing it shows)."""
        return FileResponse(WEB_DIR / "index.html", headers={"Cache-Control": "no-cache"})

    @app.get("/static/{path:path}", include_in_schema=False)
    async def static(path: str) -> FileResponse:
        """The page's vendored scripts and styles."""
        target = (WEB_DIR / path).resolve()
        if WEB_DIR.resolve() not in target.parents or not target.is_file():
            raise HTTPException(404, "not found")
        return FileResponse(target, headers={"Cache-Control": "no-cache"})


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("nyla-host")
    except PackageNotFoundError:
        return "0"
