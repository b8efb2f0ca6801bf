"""Owned ids are checked against the run's context in one place, before any handler runs
(issue 12: authorisation by construction), on the real database."""

from __future__ import annotations

from typing import Annotated

import pytest
from pydantic import BaseModel

from nyla.agent.authorize import Owned, owned_fields
from nyla.agent.registry import ToolRegistry
from nyla.models.agent import RunContext
from nyla.models.ai import ToolCall
from nyla.models.tools import Tool, ToolContext
from nyla.tools._args import Args

pytestmark = pytest.mark.db


class AnyIds(Args):
    file_id: str | None = None
    file_ids: list[str] | None = None
    folder_id: str | None = None
    data_source_id: str | None = None
    connection_id: str | None = None
    workflow_id: str | None = None
    feature_instance_id: str | None = None
    target: Annotated[str | None, Owned("folder")] = None
    vendor_file_id: Annotated[str | None, Owned(None)] = None


def probe() -> tuple[Tool, list[BaseModel]]:
    seen: list[BaseModel] = []

    async def handler(args: AnyIds, ctx: ToolContext) -> str:
        seen.append(args)
        return "ran"

    return Tool.from_model("probe", "touches owned things", AnyIds, handler), seen


def test_owned_fields_by_name_and_by_marker():
    kinds = {wire: kind for _, wire, kind in owned_fields(AnyIds)}
    assert kinds == {
        "fileId": "file",
        "fileIds": "file",
        "folderId": "folder",
        "dataSourceId": "dataSource",
        "connectionId": "connection",
        "workflowId": "workflow",
        "featureInstanceId": "featureInstance",
        "target": "folder",
    }
    with pytest.raises(ValueError):
        Owned("planet")


async def test_every_owned_kind_is_checked_before_the_handler(db, make_kernel):
    kernel = make_kernel(db=db)
    mine = RunContext(user_id="u1", mandate_id="m1", workflow_id="wf-1", feature_instance_id="fi")
    theirs = RunContext(user_id="u2", mandate_id="m1")
    own_file = await kernel.files.save("a.txt", b"mine", mine)
    other_file = await kernel.files.save("b.txt", b"theirs", theirs)
    own_folder = await kernel.files.create_folder("Mine", mine)
    other_folder = await kernel.files.create_folder("Theirs", theirs)
    await kernel.knowledge.governance.add_connection(
        "c-mine", "msft", user_id="u1", mandate_id="m1"
    )
    await kernel.knowledge.governance.add_connection(
        "c-theirs", "msft", user_id="u2", mandate_id="m1"
    )
    await kernel.knowledge.governance.add_data_source(
        "ds-mine", "c-mine", "/", user_id="u1", mandate_id="m1"
    )
    await kernel.knowledge.governance.add_data_source(
        "ds-theirs", "c-theirs", "/", user_id="u2", mandate_id="m1"
    )
    await kernel.files.workflows.load("wf-theirs", theirs)

    tool, seen = probe()
    registry = ToolRegistry([tool], database=kernel.db)
    ctx = ToolContext(run=mine)

    async def call(**arguments):
        import json

        done = await registry.dispatch(
            ToolCall(
                id=f"c{len(seen)}-{len(arguments)}", name="probe", arguments=json.dumps(arguments)
            ),
            ctx,
        )
        return done.result

    allowed = await call(
        fileId=own_file.id,
        fileIds=[own_file.id],
        folderId=own_folder.id,
        dataSourceId="ds-mine",
        connectionId="c-mine",
        workflowId="wf-1",
        featureInstanceId="fi",
        target=own_folder.id,
        vendorFileId="anything",
    )
    assert allowed.success and allowed.content == "ran"
    refused = {
        "fileId": other_file.id,
        "fileIds": [own_file.id, other_file.id],
        "folderId": other_folder.id,
        "target": other_folder.id,
        "dataSourceId": "ds-theirs",
        "connectionId": "c-theirs",
        "workflowId": "wf-theirs",
        "featureInstanceId": "other",
    }
    before = len(seen)
    for field, value in refused.items():
        result = await call(**{field: value})
        assert not result.success, field
        assert result.error_details.field == field
        expected = "ACCESS_DENIED" if field == "featureInstanceId" else "NOT_FOUND"
        assert result.error_details.code == expected, (field, result.error)
    assert len(seen) == before  # the handler never ran for a refused id
    # an id that does not exist at all is answered the same way as another user's
    assert (await call(fileId="no-such-file")).error_details.code == "NOT_FOUND"


@pytest.mark.parametrize(
    "hostile",
    ["\x00a", "a\ud800b", "x" * 10_000, ["ok-looking", "\x00"]],
    ids=["nul", "lone-surrogate", "too-long", "list-with-nul"],
)
async def test_an_id_no_row_can_have_is_not_found_without_a_driver_error(db, make_kernel, hostile):
    kernel = make_kernel(db=db)
    tool, seen = probe()
    registry = ToolRegistry([tool], database=kernel.db)
    ctx = ToolContext(run=RunContext(user_id="u1", mandate_id="m1"))
    field = "fileIds" if isinstance(hostile, list) else "fileId"
    import json

    done = await registry.dispatch(
        ToolCall(id="h1", name="probe", arguments=json.dumps({field: hostile})), ctx
    )
    result = done.result
    assert not result.success and seen == []
    assert result.error_details.code == "NOT_FOUND", result.error
    assert result.error_details.field == field
    # the model is told what it sent was not found, never the driver's words
    for leak in ("psycopg", "DataError", "SELECT", "NUL", "invalid byte"):
        assert leak not in (result.error or ""), result.error
