"""The host's routers, one module per area; :func:`api_router` joins them."""

from __future__ import annotations

from fastapi import APIRouter


def api_router() -> APIRouter:
    """Every API route of the host (the page and its assets are added by ``create_app``)."""
    from nyla_host.oauth import routes as oauth
    from nyla_host.routes import (
        access,
        automation,
        billing,
        catalog,
        connection_items,
        connections,
        conversations,
        datasources,
        files,
        mcp,
        mcp_oauth_client,
        openai_compat,
        rag,
        runs,
        session,
        settings_sections,
        source_policy,
        teams,
    )

    # the routes are copied, not included: an app can then list every route it serves
    # (included routers are opaque in FastAPI's route table), which the deny-by-default test does
    router = APIRouter()
    modules = (session, runs, conversations, catalog, files, connections, datasources, rag, access)
    extra = (source_policy, connection_items, automation, billing, openai_compat, mcp, oauth, teams)
    for module in (*modules, *extra, mcp_oauth_client, settings_sections):
        router.routes.extend(module.router.routes)
    return router
