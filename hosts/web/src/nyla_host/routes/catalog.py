"""What the installed plugins offer (models, toolboxes) and knowledge search."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request

from nyla import RunContext, SearchQuery
from nyla.sdk import config_value
from nyla.sdk.connectors import describe_connector
from nyla.sdk.run_toolboxes import RunToolboxes
from nyla_host.auth import need_user
from nyla_host.identity import Identity
from nyla_host.model_choice import model_choice
from nyla_host.service_access import KNOWLEDGE, need_service
from nyla_host.state import host
from nyla_host.timezone import request_timezone

router = APIRouter(prefix="/api", tags=["catalog"])


def run_context(identity: Identity) -> RunContext:
    """The run context of a request's caller (the request's timezone included)."""
    return RunContext(
        user_id=identity.user_id,
        mandate_id=identity.mandate_id,
        role=identity.role.value,
        timezone=request_timezone(),
    )


@router.get("/models")
async def models(request: Request, identity: Identity = Depends(need_user)) -> dict[str, Any]:
    """The models the caller may use (the server's allow-list for their user and mandate),
    with prices (CHF per million tokens), and ``default``: the one a run without a model
    gets."""
    choice = await model_choice(host(request), identity)
    return {
        "models": [{**spec.to_wire(), "label": spec.name or spec.id} for spec in choice.specs],
        "default": choice.default,
    }


@router.get("/toolboxes")
async def toolboxes(request: Request, identity: Identity = Depends(need_user)) -> dict[str, Any]:
    """Every toolbox the caller's runs may get, with its tools and when it is active: the
    installed ones and those a plugin resolves for the caller when a run starts (their MCP
    servers), in place of the plugin's placeholder entry."""
    kernel = host(request).kernel
    resolved = await kernel.agent.run_toolboxes(run_context(identity))
    registry = {
        **resolved,
        **{k: v for k, v in kernel.plugins.toolboxes.items() if not isinstance(v, RunToolboxes)},
    }
    return {
        "toolboxes": [
            {
                "id": tb.id,
                "label": tb.label,
                "description": tb.description,
                "tools": [t.name for t in tb.tools],
                "defaultActive": tb.default_active,
                "requiresConnection": tb.requires_connection,
                "featureCode": tb.feature_code,
            }
            for tb in sorted(registry.values(), key=lambda t: t.id)
        ]
    }


@router.get("/connectors")
async def connectors(request: Request, identity: Identity = Depends(need_user)) -> dict[str, Any]:
    """The services the installed connectors reach, with what a page needs to connect one:
    a human label, how it signs in (``oauth``, ``token``, ``none``), whether its OAuth app is
    configured, and its settings (JSON Schema and a list of fields)."""
    plugins = host(request).kernel.plugins
    out = []
    for service in sorted(plugins.connectors):
        adapter = plugins.connectors[service]
        oauth = getattr(adapter, "oauth", None)
        client_id = getattr(oauth, "client_id_setting", "") if oauth else ""
        out.append(
            {
                "service": service,
                **describe_connector(adapter),
                "walker": any(service in w.services for w in plugins.walkers.values()),
                "oauthConfigured": bool(client_id and config_value(client_id)),
            }
        )
    return {"connectors": out}


@router.get("/knowledge/search")
async def knowledge_search(
    request: Request,
    q: str = Query(min_length=1, max_length=2000),
    k: int = Query(default=10, ge=1, le=100),
    identity: Identity = Depends(need_service(KNOWLEDGE)),
) -> dict[str, Any]:
    """Semantic (hybrid) search over what the caller may read in the knowledge store (403
    without ``service.knowledge``)."""
    knowledge = host(request).kernel.knowledge
    # a kernel error is mapped by the app's handler: a query with no words is the caller's
    # 400, an unreachable database 503, a failing embedding provider 502
    result = await knowledge.search(SearchQuery(text=q, context=run_context(identity), k=k))
    return result.to_wire()
