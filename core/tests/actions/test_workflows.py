"""Stored workflow graphs: edits checked against the catalog, validation naming the node,
another user's workflow refused."""

from __future__ import annotations

import pytest

from nyla.actions.graph import WorkflowEditError
from nyla.actions.workflows import WorkflowNotFoundError
from nyla.models.agent import RunContext
from nyla.models.workflows import WorkflowConnection

pytestmark = pytest.mark.db

ALICE = RunContext(user_id="alice", mandate_id="m1")
BOB = RunContext(user_id="bob", mandate_id="m1")


@pytest.fixture
def service(make_kernel, db, probe):
    return make_kernel(probe, db=db).workflows


def link(source: str, target: str, parameter: str) -> WorkflowConnection:
    return WorkflowConnection(from_node=source, to_node=target, to_parameter=parameter)


async def test_nodes_are_added_updated_connected_and_removed(service):
    wf = await service.create("Digest", ALICE)
    first = await service.add_node(wf.id, "ai", "process", {"prompt": "Summarize"}, ALICE)
    second = await service.add_node(wf.id, "probe", "note", {}, ALICE, position={"x": 1, "y": 2})
    assert (first.id, second.id) == ("n1", "n2")
    await service.connect(wf.id, link("n1", "n2", "title"), ALICE)
    await service.update_node(wf.id, "n2", ALICE, parameters={"count": 3})
    stored = await service.get(wf.id, ALICE)
    assert stored.node("n2").parameters == {"count": 3}
    assert stored.node("n2").position == {"x": 1, "y": 2}
    assert stored.connections == [link("n1", "n2", "title")]
    assert await service.validate(wf.id, ALICE) == []
    assert await service.remove_node(wf.id, "n1", ALICE) == 1
    after = await service.get(wf.id, ALICE)
    assert [n.id for n in after.nodes] == ["n2"] and after.connections == []


async def test_edits_that_do_not_fit_the_catalog_are_refused(service):
    wf = await service.create("Bad", ALICE)
    with pytest.raises(WorkflowEditError, match=r"unknown action ai\.dance"):
        await service.add_node(wf.id, "ai", "dance", {}, ALICE)
    with pytest.raises(WorkflowEditError, match="count"):
        await service.add_node(wf.id, "probe", "note", {"count": "many"}, ALICE)
    with pytest.raises(WorkflowEditError, match="bogus"):
        await service.add_node(wf.id, "probe", "note", {"bogus": 1}, ALICE)
    await service.add_node(wf.id, "ai", "process", {"prompt": "x"}, ALICE, node_id="a")
    await service.add_node(wf.id, "probe", "note", {"title": "t"}, ALICE, node_id="b")
    with pytest.raises(WorkflowEditError, match=r"'count' takes no node output.*gives text"):
        await service.connect(wf.id, link("a", "b", "count"), ALICE)
    with pytest.raises(WorkflowEditError, match="has no parameter 'nope'"):
        await service.connect(wf.id, link("a", "b", "nope"), ALICE)
    with pytest.raises(WorkflowEditError, match="no node 'z'"):
        await service.connect(wf.id, link("z", "b", "title"), ALICE)
    with pytest.raises(WorkflowEditError, match="no connection"):
        await service.disconnect(wf.id, link("a", "b", "label"), ALICE)
    assert [n.id for n in (await service.get(wf.id, ALICE)).nodes] == ["a", "b"]


async def test_validation_names_each_problem_and_its_node(service):
    wf = await service.create("Problems", ALICE)
    graph = await service.get(wf.id, ALICE)
    data = graph.to_wire()
    data["nodes"] = [
        {"id": "gone", "method": "ai", "action": "removedLater", "parameters": {}},
        {"id": "a", "method": "probe", "action": "note", "parameters": {}},
        {"id": "b", "method": "probe", "action": "note", "parameters": {"title": "t"}},
        {"id": "c", "method": "ai", "action": "process", "parameters": {}},
    ]
    data["connections"] = [
        {"fromNode": "c", "toNode": "b", "toParameter": "label"},
        {"fromNode": "b", "toNode": "c", "toParameter": "prompt"},
    ]
    saved = await service.save(type(graph).model_validate(data), ALICE)
    assert len(saved.connections) == 2
    problems = {(p.node, p.code): p.message for p in await service.validate(wf.id, ALICE)}
    assert "ai.removedLater" in problems[("gone", "UNKNOWN_ACTION")]
    assert "'title'" in problems[("a", "MISSING_PARAMETER")]
    assert ("c", "MISSING_PARAMETER") not in problems  # fed by node b
    assert "b -> c -> b" in problems[("b", "CYCLE")]


async def test_a_type_mismatch_in_a_stored_graph_is_reported(service, db):
    wf = await service.create("Mismatch", ALICE)
    await service.add_node(wf.id, "ai", "process", {"prompt": "x"}, ALICE, node_id="a")
    await service.add_node(wf.id, "probe", "note", {"title": "t"}, ALICE, node_id="b")
    # the probe's count was text before its signature changed: stored rows can hold this
    from sqlalchemy import update

    from nyla.tables.workflows import ActionWorkflowRow

    async with db.session() as s:
        await s.execute(
            update(ActionWorkflowRow)
            .where(ActionWorkflowRow.id == wf.id)
            .values(connections=[{"fromNode": "a", "toNode": "b", "toParameter": "count"}])
        )
    problems = await service.validate(wf.id, ALICE)
    assert [(p.node, p.code) for p in problems] == [("b", "TYPE_MISMATCH")]
    assert "node 'a'" in problems[0].message and "'count'" in problems[0].message


async def test_another_users_workflow_is_not_found(service):
    wf = await service.create("Private", ALICE)
    for call in (
        service.get(wf.id, BOB),
        service.add_node(wf.id, "ai", "process", {"prompt": "x"}, BOB),
        service.validate(wf.id, BOB),
    ):
        with pytest.raises(WorkflowNotFoundError):
            await call
    assert await service.list_for(BOB) == []
    assert [w.id for w in await service.list_for(ALICE)] == [wf.id]
    other_instance = RunContext(user_id="alice", mandate_id="m1", feature_instance_id="fi2")
    scoped = await service.create("Scoped", ALICE, feature_instance_id="fi1")
    with pytest.raises(WorkflowNotFoundError):
        await service.get(scoped.id, other_instance)
    assert [w.id for w in await service.list_for(other_instance)] == [wf.id]


async def test_a_node_may_not_name_a_file_the_user_cannot_read(service, make_kernel, db, probe):
    kernel = make_kernel(probe, db=db)
    theirs = await kernel.files.save("b.txt", b"theirs", BOB)
    wf = await service.create("Files", ALICE)
    with pytest.raises(WorkflowEditError, match="not found"):
        await service.add_node(wf.id, "probe", "note", {"sources": [theirs.id]}, ALICE)
