"""The one executor validates every action call centrally: required fields, types, reference
objects to their ids, primitive coercion; owned ids through the kernel's check."""

from __future__ import annotations

import pytest

from nyla.actions.catalog import ActionCatalog
from nyla.actions.executor import ActionArgumentError, ActionExecutor
from nyla.models.agent import RunContext
from nyla.models.tools import ToolContext


@pytest.fixture
def executor(make_host, probe):
    return ActionExecutor(ActionCatalog(make_host(probe, builtins=True).methods), None)


def refused(executor, arguments, action="note", method="probe"):
    with pytest.raises(ActionArgumentError) as caught:
        executor.validate(method, action, arguments)
    return caught.value.result


def test_a_missing_required_field_is_named(executor):
    result = refused(executor, {"count": 2})
    assert result.error_details.code == "MISSING_FIELD"
    assert result.error_details.field == "title"
    assert "add the required field 'title'" in result.error_details.suggestion


def test_a_wrong_type_is_refused_with_the_field(executor):
    result = refused(executor, {"title": "t", "count": "many"})
    assert result.error_details.code == "INVALID_TYPE" and result.error_details.field == "count"
    result = refused(executor, {"title": "t", "sources": {"a": 1}})
    assert result.error_details.code == "INVALID_TYPE" and result.error_details.field == "sources"


def test_unknown_fields_and_actions_and_non_objects(executor):
    assert refused(executor, {"title": "t", "colour": "red"}).error_details.code == "UNKNOWN_FIELD"
    assert refused(executor, {}, action="vanish").error_details.code == "UNKNOWN_ACTION"
    assert refused(executor, ["t"]).error_details.code == "INVALID_TYPE"


def test_primitives_are_coerced(executor):
    params = executor.validate("probe", "note", {"title": 42, "count": "3", "label": 7.5})
    assert (params.title, params.count, params.label) == ("42", 3, "7.5")


def test_reference_objects_become_their_ids(executor):
    params = executor.validate(
        "probe",
        "note",
        {
            "title": "t",
            "instance": {"type": "featureInstance", "id": "fi-1"},
            "sources": [{"type": "file", "id": "f-1"}, "f-2"],
        },
    )
    assert params.instance == "fi-1" and params.sources == ["f-1", "f-2"]
    one = executor.validate("probe", "note", {"title": "t", "sources": {"type": "file", "id": "x"}})
    assert one.sources == ["x"]  # a single reference for a list parameter


def test_a_reference_of_the_wrong_kind_is_refused(executor):
    result = refused(executor, {"title": "t", "instance": {"type": "file", "id": "f-1"}})
    assert result.error_details.code == "INVALID_TYPE"
    assert result.error_details.field == "instance"
    assert "featureInstance" in result.error
    result = refused(executor, {"title": "t", "instance": {"id": "fi-1"}})
    assert result.error_details.code == "INVALID_TYPE"


async def test_run_refuses_another_feature_instance_before_the_handler(executor, probe):
    ctx = ToolContext(run=RunContext(user_id="u1", feature_instance_id="fi-mine"))
    result = await executor.run(
        "probe", "note", {"title": "t", "instance": {"type": "featureInstance", "id": "fi-x"}}, ctx
    )
    assert not result.success and result.error_details.code == "ACCESS_DENIED"
    assert result.error_details.field == "instance"
    assert probe.calls == []
    result = await executor.run(
        "probe",
        "note",
        {"title": "t", "instance": {"type": "featureInstance", "id": "fi-mine"}},
        ctx,
    )
    assert result.success and result.data["instance"] == "fi-mine"
    assert [c.instance for c in probe.calls] == ["fi-mine"]


async def test_run_answers_bad_arguments_as_a_result(executor, probe):
    result = await executor.run("probe", "note", {"count": 1}, ToolContext())
    assert not result.success and result.error_details.code == "MISSING_FIELD"
    assert probe.calls == []


@pytest.mark.db
async def test_file_references_go_through_the_owned_id_check(db, make_kernel, probe):
    kernel = make_kernel(probe, db=db)
    mine = RunContext(user_id="u1", mandate_id="m1")
    theirs = RunContext(user_id="u2", mandate_id="m1")
    own = await kernel.files.save("a.txt", b"mine", mine)
    other = await kernel.files.save("b.txt", b"theirs", theirs)
    ctx = ToolContext(run=mine)
    result = await kernel.action_executor.run(
        "probe", "note", {"title": "t", "sources": [own.id, {"type": "file", "id": other.id}]}, ctx
    )
    assert not result.success and result.error_details.code == "NOT_FOUND"
    assert result.error_details.field == "sources" and probe.calls == []
    result = await kernel.action_executor.run(
        "probe", "note", {"title": "t", "sources": [{"type": "file", "id": own.id}]}, ctx
    )
    assert result.success and probe.calls[0].sources == [own.id]
