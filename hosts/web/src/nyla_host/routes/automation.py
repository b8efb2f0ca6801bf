"""The workflow actions on the host (``/api/automation2``): the catalog of methods and typed
actions, one action run through the kernel's action executor, and the caller's stored
workflow graphs."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Depends, HTTPException, Query, Request
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from nyla.host import WorkflowConnection, WorkflowEditError, WorkflowNode, WorkflowNotFoundError
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
    "BUDGET_EXCEEDED": 402,
    "DENIED": 403,
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
    max_cost_chf: float | None = Query(None, alias="maxCostChf", ge=0),
    workflow_id: str | None = Query(None, alias="workflowId", min_length=1, max_length=128),
) -> dict[str, Any]:
    """Run one action with the JSON body as its parameters, as the caller, through the same
    executor as an agent's call: under a budget (``maxCostChf``, at most the host's cap;
    402 when it is spent) and the plugins' policy hook (403 on a denial). ``workflowId``
    names the caller's conversation the result documents are bound to (403 for one they
    may not change). Any other refusal is a 4xx whose ``detail`` says what to fix; the
    action's own result (success or failure) comes back as it is."""
    result = await host(request).kernel.run_action(
        method,
        action,
        arguments,
        run_context(identity),
        max_cost_chf=max_cost_chf,
        workflow_id=workflow_id,
    )
    details = result.error_details
    if not result.success and details is not None and details.code in REFUSALS:
        raise HTTPException(REFUSALS[details.code], result.error or details.code)
    return result.to_wire()


class WorkflowBody(BaseModel):
    """A workflow as the editor saves it (camelCase): its name, nodes and connections."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    nodes: list[WorkflowNode] = Field(default_factory=list)
    connections: list[WorkflowConnection] = Field(default_factory=list)


class NewWorkflow(BaseModel):
    """A new, empty workflow (camelCase)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    feature_instance_id: str | None = None


@router.get("/workflows")
async def list_workflows(
    request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """The caller's workflows, newest change first."""
    graphs = await host(request).kernel.workflows.list_for(run_context(identity))
    return {"workflows": [g.to_wire() for g in graphs]}


@router.post("/workflows", status_code=201)
async def create_workflow(
    body: NewWorkflow, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """A new empty workflow of the caller."""
    graph = await host(request).kernel.workflows.create(
        body.name, run_context(identity), feature_instance_id=body.feature_instance_id
    )
    return graph.to_wire()


@router.get("/workflows/{workflow_id}")
async def get_workflow(
    workflow_id: str, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """One workflow of the caller with what validation finds (404 for anyone else's)."""
    service, context = host(request).kernel.workflows, run_context(identity)
    try:
        graph = await service.get(workflow_id, context)
    except WorkflowNotFoundError as exc:
        raise HTTPException(404, exc.args[0]) from None
    problems = await service.validate(workflow_id, context)
    return {**graph.to_wire(), "problems": [p.to_wire() for p in problems]}


@router.put("/workflows/{workflow_id}")
async def put_workflow(
    workflow_id: str,
    body: WorkflowBody,
    request: Request,
    identity: Identity = Depends(need_user),
) -> dict[str, Any]:
    """Replace a workflow's name, nodes and connections; each is checked as an edit is (422
    naming the node), and nothing is stored when one does not fit."""
    service, context = host(request).kernel.workflows, run_context(identity)
    try:
        current = await service.get(workflow_id, context)
        update = {"name": body.name, "nodes": body.nodes, "connections": body.connections}
        saved = await service.save(current.model_copy(update=update), context)
    except WorkflowNotFoundError as exc:
        raise HTTPException(404, exc.args[0]) from None
    except WorkflowEditError as exc:
        raise HTTPException(422, str(exc)) from None
    problems = await service.validate(workflow_id, context)
    return {**saved.to_wire(), "problems": [p.to_wire() for p in problems]}


def _with_runs() -> None:
    """The runs of stored workflows live beside them (:mod:`nyla_host.routes.workflow_runs`)."""
    from nyla_host.routes.workflow_runs import router as runs

    router.routes.extend(runs.routes)


_with_runs()
