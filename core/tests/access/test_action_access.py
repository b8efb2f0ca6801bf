"""Service access for actions run outside an agent run (issue 35): one action through
``kernel.run_action`` (the host's ``POST /api/automation2/actions/...``) and a workflow run
need ``service.agent`` — an action is one of the agent's tools run directly — and an action
(or a workflow run's node) naming a connection whose connector the caller may not use is
refused with ``PERMISSION_DENIED`` before its handler runs, by the same check the tool
registry makes."""

from __future__ import annotations

import pytest
from pydantic import Field

from nyla.access.permissions import AGENT, ServiceAccessDenied, connector
from nyla.models.agent import RunContext
from nyla.models.tools import ToolContext
from nyla.sdk import hookimpl
from nyla.sdk.actions import Action, ActionParams, Method
from nyla.sdk.connectors import BaseConnector
from nyla.tables.knowledge import UserConnection

pytestmark = pytest.mark.db

ANNA = RunContext(user_id="anna", mandate_id="m1")


class LookupParams(ActionParams):
    """Parameters of ``crm.lookup``."""

    connection_id: str = Field(description="The connection to look in.")


class Hub(BaseConnector):
    """An installed connector (its permission is ``service.connector.hub``); never called."""

    service = "hub"
    label = "Hub"
    base_url = "https://hub.example.com/api"


class CrmPlugin:
    """The ``crm`` method: ``lookup`` records the connection it was asked about; and the
    ``hub`` connector."""

    def __init__(self) -> None:
        self.looked: list[str] = []

    async def lookup(self, params: LookupParams, ctx: ToolContext) -> str:
        self.looked.append(params.connection_id)
        return f"looked in {params.connection_id}"

    @hookimpl
    def nyla_connectors(self) -> list[BaseConnector]:
        return [Hub()]

    @hookimpl
    def nyla_methods(self) -> list[Method]:
        lookup = Action(
            name="lookup", description="Look up.", params=LookupParams, handler=self.lookup
        )
        return [Method(name="crm", description="CRM actions.", actions=[lookup])]


async def _connection(db, service: str) -> str:
    async with db.session() as s:
        s.add(UserConnection(id=f"conn-{service}", service=service, user_id="anna"))
    return f"conn-{service}"


async def test_an_action_needs_the_agent_and_the_connector_it_names(make_kernel, db):
    crm = CrmPlugin()
    kernel = make_kernel(crm, db=db)
    conn = await _connection(db, "hub")
    done = await kernel.run_action("crm", "lookup", {"connectionId": conn}, ANNA)
    assert done.success and crm.looked == [conn]

    await kernel.service_access.set("user", "anna", connector("hub"), False)
    refused = await kernel.run_action("crm", "lookup", {"connectionId": conn}, ANNA)
    assert not refused.success and refused.error_details is not None
    assert refused.error_details.code == "PERMISSION_DENIED"
    assert refused.error_details.field == "service.connector.hub"
    assert crm.looked == [conn]  # the handler never ran

    await kernel.service_access.set("mandate", "m1", AGENT, False)
    with pytest.raises(ServiceAccessDenied, match=r"service\.agent"):
        await kernel.run_action("crm", "lookup", {"connectionId": conn}, ANNA)
    await kernel.service_access.set("user", "anna", AGENT, True)  # the user's rule wins
    again = await kernel.run_action("crm", "lookup", {"connectionId": conn}, ANNA)
    assert again.error_details is not None and again.error_details.code == "PERMISSION_DENIED"


async def test_a_workflow_run_needs_the_agent(make_kernel, db):
    from nyla.models.workflows import WorkflowNode

    crm = CrmPlugin()
    kernel = make_kernel(crm, db=db)
    conn = await _connection(db, "hub")
    graph = await kernel.workflows.create("lookups", ANNA)
    node = WorkflowNode(id="n1", method="crm", action="lookup", parameters={"connectionId": conn})
    await kernel.workflows.save(graph.model_copy(update={"nodes": [node]}), ANNA)
    await kernel.service_access.set("user", "anna", AGENT, False)
    with pytest.raises(ServiceAccessDenied, match=r"service\.agent"):
        await kernel.workflow_runs.start(graph.id, ANNA)
    assert crm.looked == []

    # with the agent but not the connector, the node is refused and the handler never runs
    await kernel.service_access.set("user", "anna", AGENT, True)
    await kernel.service_access.set("user", "anna", connector("hub"), False)
    run = await kernel.workflow_runs.start(graph.id, ANNA)
    ended = await kernel.workflow_runs.wait(run.id, ANNA)
    assert ended.status == "failed", ended
    assert "service.connector.hub" in str(ended.model_dump()), ended
    assert crm.looked == []
