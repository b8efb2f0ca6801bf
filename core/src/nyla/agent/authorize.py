"""Authorisation of owned ids, in one place for every tool (by construction, not by habit).

Every id a tool receives of something owned — a feature instance, file, folder, data source,
connection or workflow — is checked against the run's context after the arguments were
validated and before the handler runs. A tool author does nothing for it: an argument is
recognised by its name (``featureInstanceId``, ``fileId``/``fileIds``, ``folderId``,
``dataSourceId``, ``connectionId``, ``workflowId``, camelCase or snake_case) or marked
explicitly with :class:`Owned`::

    parent: Annotated[str | None, Owned("folder")] = None

An argument that only looks like one (the id of a file in a vendor's system, say) opts out
with ``Annotated[str, Owned(None)]``.

The rules: a feature instance must be the run's; a workflow one of the user's, or the run's
own while it is not stored yet;
a stored workflow graph (``Owned("workflowGraph")``) or a run of one (``Owned("workflowRun")``)
the user's, of the run's feature instance or of none;
files and folders must be readable in the run's scope (the file store's rule); data sources
and connections must belong to the run's user (and mandate). Anything else is refused with
``ACCESS_DENIED`` — an id that does not exist is refused the same way, so the answer tells
nothing about other users' data.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from nyla.models.agent import RunContext
from nyla.models.tools import ToolContext, ToolResult
from nyla.text import has_unstorable_chars

if TYPE_CHECKING:
    from nyla.db import Database

#: the kinds of owned ids
KINDS = (
    "featureInstance",
    "file",
    "folder",
    "dataSource",
    "connection",
    "workflow",
    "workflowGraph",
    "workflowRun",
)

#: argument names (alias or field name) that carry an owned id without an explicit marker
KNOWN_NAMES: dict[str, str] = {
    "featureInstanceId": "featureInstance",
    "feature_instance_id": "featureInstance",
    "fileId": "file",
    "file_id": "file",
    "fileIds": "file",
    "file_ids": "file",
    "folderId": "folder",
    "folder_id": "folder",
    "dataSourceId": "dataSource",
    "data_source_id": "dataSource",
    "dataSourceIds": "dataSource",
    "data_source_ids": "dataSource",
    "connectionId": "connection",
    "connection_id": "connection",
    "workflowId": "workflow",
    "workflow_id": "workflow",
}


class Owned:
    """Marks a tool argument as the id (or list of ids) of something owned, of ``kind``
    (one of :data:`KINDS`); ``Owned(None)`` marks an id-like name as not owned."""

    def __init__(self, kind: str | None) -> None:
        if kind is not None and kind not in KINDS:
            raise ValueError(f"unknown owned kind {kind!r} (kinds: {', '.join(KINDS)})")
        self.kind = kind

    def __repr__(self) -> str:
        return f"Owned({self.kind!r})"


@functools.cache
def owned_fields(args_model: type[BaseModel]) -> tuple[tuple[str, str, str], ...]:
    """``(field name, wire name, kind)`` of every owned-id argument of ``args_model``."""
    found = []
    for name, info in args_model.model_fields.items():
        wire = info.alias or name
        marks = [m for m in info.metadata if isinstance(m, Owned)]
        kind = marks[0].kind if marks else KNOWN_NAMES.get(wire) or KNOWN_NAMES.get(name)
        if kind is not None:
            found.append((name, wire, kind))
    return tuple(found)


def _ids(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple, set, frozenset)):
        return [str(v) for v in value if v is not None]
    return [str(value)]


Authorizer = Callable[[list[str], RunContext, "Database | None"], Awaitable[list[str]]]


async def _feature_instances(ids: list[str], run: RunContext, db: Database | None) -> list[str]:
    return [i for i in ids if i != run.feature_instance_id]


Visible = Callable[[RunContext], tuple[Any, Any]]


async def _invisible(
    ids: list[str], run: RunContext, db: Database | None, visible: Visible
) -> list[str]:
    """The ids among ``ids`` that the run may not see; ``visible(context)`` is the select of
    visible rows and their id column."""
    if db is None:
        return list(ids)  # nothing to check against: refuse (fail closed)
    # An id no row can have (NUL, lone surrogate, absurd length) is refused here: sent to the
    # database it would come back as a driver error with SQL text in it.
    askable = [i for i in ids if _storable(i)]
    if not askable:
        return list(ids)
    statement, id_column = visible(run)
    async with db.read_session() as s:
        seen = set((await s.execute(statement.where(id_column.in_(askable)))).scalars())
    return [i for i in ids if i not in seen]


#: longer than any id nyla stores (uuids, slugs, vendor ids)
MAX_ID_CHARS = 512


def _storable(value: str) -> bool:
    """Whether ``value`` could be an id in the database at all."""
    return len(value) <= MAX_ID_CHARS and not has_unstorable_chars(value)


def _readable(table: Any) -> Visible:
    """Files or folders by the file store's own scope rule."""
    from sqlalchemy import select

    from nyla.files.scope import readable

    return lambda context: (select(table.id).where(readable(table, context)), table.id)


def _owned_by(table: Any) -> Visible:
    """Rows of the run's user (in the run's mandate, or in none)."""
    # sqlalchemy loads when an id is first checked: a tool module marking its arguments
    # with Owned is imported at plugin discovery, which loads no storage layer
    from sqlalchemy import or_, select

    return lambda context: (
        select(table.id).where(
            table.user_id == context.user_id,
            or_(table.mandate_id.is_(None), table.mandate_id == context.mandate_id),
        ),
        table.id,
    )


async def _files(ids: list[str], run: RunContext, db: Database | None) -> list[str]:
    from nyla.files.tables import FileRow

    return await _invisible(ids, run, db, _readable(FileRow))


async def _folders(ids: list[str], run: RunContext, db: Database | None) -> list[str]:
    from nyla.files.tables import FolderRow

    return await _invisible(ids, run, db, _readable(FolderRow))


async def _data_sources(ids: list[str], run: RunContext, db: Database | None) -> list[str]:
    from nyla.tables.knowledge import DataSource

    return await _invisible(ids, run, db, _owned_by(DataSource))


async def _connections(ids: list[str], run: RunContext, db: Database | None) -> list[str]:
    from nyla.tables.knowledge import UserConnection

    return await _invisible(ids, run, db, _owned_by(UserConnection))


async def _workflows(ids: list[str], run: RunContext, db: Database | None) -> list[str]:
    """Chat workflows: one of the user's (in the run's mandate or none), or the run's own
    when it is new (not yet stored) — the run's own id stored for someone else is refused."""
    from sqlalchemy import select

    from nyla.files.tables import WorkflowRow

    others = [i for i in ids if i != run.workflow_id]
    refused = await _invisible(others, run, db, _owned_by(WorkflowRow)) if others else []
    if db is None or len(others) == len(ids) or not _storable(str(run.workflow_id)):
        return refused
    own, column = _owned_by(WorkflowRow)(run)
    async with db.read_session() as s:
        stored = await s.scalar(select(WorkflowRow.id).where(WorkflowRow.id == run.workflow_id))
        mine = await s.scalar(own.where(column == run.workflow_id))
    return [str(run.workflow_id), *refused] if stored is not None and mine is None else refused


def _of_instance(table: Any) -> Visible:
    """Rows of the run's user (:func:`_owned_by`) and, when the run works in a feature
    instance, only those of that instance or of none."""
    from sqlalchemy import or_

    def visible(context: RunContext) -> tuple[Any, Any]:
        statement, column = _owned_by(table)(context)
        if context.feature_instance_id is not None:
            statement = statement.where(
                or_(
                    table.feature_instance_id.is_(None),
                    table.feature_instance_id == context.feature_instance_id,
                )
            )
        return statement, column

    return visible


async def _workflow_graphs(ids: list[str], run: RunContext, db: Database | None) -> list[str]:
    """Stored workflow graphs: the run's user's (in its mandate or none), and when the run
    works in a feature instance, only those of that instance or of none."""
    from nyla.tables.workflows import ActionWorkflowRow

    return await _invisible(ids, run, db, _of_instance(ActionWorkflowRow))


async def _workflow_runs(ids: list[str], run: RunContext, db: Database | None) -> list[str]:
    """Runs of stored workflows, seen as a workflow graph is."""
    from nyla.tables.workflow_runs import WorkflowRunRow

    return await _invisible(ids, run, db, _of_instance(WorkflowRunRow))


AUTHORIZERS: dict[str, Authorizer] = {
    "featureInstance": _feature_instances,
    "file": _files,
    "folder": _folders,
    "dataSource": _data_sources,
    "connection": _connections,
    "workflow": _workflows,
    "workflowGraph": _workflow_graphs,
    "workflowRun": _workflow_runs,
}

_LABELS = {
    "featureInstance": "feature instance",
    "dataSource": "data source",
    "workflowGraph": "workflow",
    "workflowRun": "workflow run",
}


_SUGGESTIONS = {
    "file": "use listFiles / searchInFileContent to find the right id",
    "folder": "use listFolders to find the right id",
    "workflowGraph": "use the id of one of your workflows",
    "workflowRun": "use the run id runWorkflow answered",
}


async def authorize(
    tool: Any, args: BaseModel, ctx: ToolContext, db: Database | None
) -> ToolResult | None:
    """``None`` when every owned id in ``args`` is the run's to use (files, folders, data
    sources, connections and workflows looked up in ``db``; without one they are refused), else the refusal
    (``ACCESS_DENIED`` for another feature instance, ``NOT_FOUND`` for anything else: an id
    outside the run's scope is answered as if it did not exist)."""
    for name, wire, kind in owned_fields(type(args)):
        ids = _ids(getattr(args, name, None))
        if not ids:
            continue
        refused = await AUTHORIZERS[kind](ids, ctx.run, db)
        if not refused:
            continue
        label = _LABELS.get(kind, kind)
        if kind == "featureInstance":
            return ToolResult.fail(
                f"{tool.name}: feature instance {refused[0]!r} is not accessible in this run "
                f"(the run's feature instance is {ctx.run.feature_instance_id!r})",
                "ACCESS_DENIED",
                field=wire,
                suggestion="leave featureInstanceId out to use the run's feature instance",
            )
        return ToolResult.fail(
            f"{label} {refused[0]!r} not found",
            "NOT_FOUND",
            field=wire,
            suggestion=_SUGGESTIONS.get(kind, f"use the id of a {label} of this run"),
        )
    return None
