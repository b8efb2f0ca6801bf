"""The workflow actions on the host (``/api/automation2``): the catalog of methods and typed
actions, and one action run through the kernel's action executor."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Depends, HTTPException, Request

from nyla_host.auth import need_user
from nyla_host.identity import Identity
from nyla_host.routes.catalog import run_context
from nyla_host.state import host

router = APIRouter(prefix="/api/automation2", tags=["automation"])

#: executor refusals -> HTTP status (anything else is the action's own result, 200)
REFUSALS = {
    "UNKNOWN_ACTION": 404,
    "NOT_FOUND": 404,
    "ACCESS_DENIED": 403,
    "MISSING_FIELD": 422,
    "UNKNOWN_FIELD": 422,
    "INVALID_TYPE": 422,
    "INVALID_VALUE": 422,
}


@router.get("/catalog")
async def catalog(request: Request, identity: Identity = Depends(need_user)) -> dict[str, Any]:
    """Every method with its actions' node definitions (tool name, whether it writes, the
    JSON schema of its parameters, its reference parameters)."""
    return host(request).kernel.actions.to_wire()


@router.post("/actions/{method}/{action}")
async def run_action(
    method: str,
    action: str,
    request: Request,
    arguments: dict[str, Any] = Body(default_factory=dict),
    identity: Identity = Depends(need_user),
) -> dict[str, Any]:
    """Run one action with the JSON body as its parameters, as the caller; a refused call is
    a 4xx whose ``detail`` says what to fix, the action's own result (success or failure)
    comes back as it is."""
    result = await host(request).kernel.run_action(method, action, arguments, run_context(identity))
    details = result.error_details
    if not result.success and details is not None and details.code in REFUSALS:
        raise HTTPException(REFUSALS[details.code], result.error or details.code)
    return result.to_wire()
