"""One toolbox for every task service: search tasks, read one, create or update one.

A task service's connector implements the task protocol
(:class:`nyla.sdk.connectors.TaskConnector`); its toolbox subclasses :class:`TaskToolbox`
and supplies only its words — the service, what a task is called there, the names and
descriptions of its arguments — and where it differs, how a search is run. The tools, their
answers, the connection handling and the write switch are the same for every service, and
the toolbox object carries the plugin's hooks::

    class ClickUpTasks(TaskToolbox):
        service = "clickup"
        label = "ClickUp"
        ...

    TASKS = ClickUpTasks()
    nyla_toolboxes = TASKS.nyla_toolboxes
    nyla_before_tool_call = TASKS.nyla_before_tool_call
"""

from __future__ import annotations

from datetime import date
from typing import Any, ClassVar, NamedTuple

from pydantic import Field, create_model

from nyla.connections.inline import inline_line
from nyla.connections.tasks import TaskChange, TaskQuery
from nyla.hookspecs import hookimpl
from nyla.models.datasource import Item, ItemPage
from nyla.models.tools import Tool, Toolbox, ToolContext, ToolResult
from nyla.sdk.toolboxes import (
    ConnectionArgs,
    ConnectionSession,
    connection_field,
    with_connection,
    write_barrier,
)

__all__ = ["TaskArg", "TaskReadArgs", "TaskSearchArgs", "TaskToolbox", "TaskWriteArgs"]


class TaskArg(NamedTuple):
    """How an argument is called where a service has its own word for it, and what the
    model is told about it."""

    name: str
    description: str


class TaskSearchArgs(ConnectionArgs):
    """Arguments of the search tool; ``container`` is the service's scope (a list path, a
    project key) under its own name."""

    query: str = ""
    container: str = ""
    mine: bool = False
    open_only: bool = Field(default=False, alias="openOnly")
    due_from: date | None = Field(
        default=None, alias="dueFrom", description="Due on/after (YYYY-MM-DD)."
    )
    due_to: date | None = Field(
        default=None, alias="dueTo", description="Due on/before (YYYY-MM-DD)."
    )
    cursor: str | None = Field(default=None, description="From a previous result: next page.")

    @property
    def filtered(self) -> bool:
        """Whether a structured filter (mine, open only, due dates) is set."""
        return bool(self.mine or self.open_only or self.due_from or self.due_to)


class TaskReadArgs(ConnectionArgs):
    """Arguments of the read tool: ``task`` under the service's own name."""

    task: str = Field(min_length=1)


class TaskWriteArgs(ConnectionArgs):
    """Arguments of the write tool: ``task`` updates it, ``container`` creates one there."""

    task: str | None = None
    container: str | None = None
    title: str | None = None
    description: str | None = None
    status: str | None = None
    due: date | None = Field(default=None, description="Due date (YYYY-MM-DD).")
    assignee: str | None = Field(default=None, description="`me`, an e-mail address or a name.")
    priority: str | None = None
    comment: str | None = Field(default=None, description="A comment to add.")


def _a(word: str) -> str:
    """``word`` with its indefinite article, by its first letter (backquotes aside)."""
    return f"{'an' if word.lstrip('`')[:1].lower() in 'aeiou' else 'a'} {word}"


class TaskToolbox:
    """The three task tools of one service — ``search<Label><Noun>s``,
    ``read<Label><Noun>``, ``write<Label><Noun>`` — over the user's connection of it.

    Subclasses set the class attributes below; :meth:`structured` and :meth:`search_scope`
    say how a search runs when the service differs from the default (structured filters go
    to ``search_tasks``, words alone to the service's own ``search``). The write tool is a
    barrier: ``NYLA_<SERVICE>_WRITE=off`` denies it (:meth:`nyla_before_tool_call`). The
    object holds the plugin's hooks: register it, or bind its two hook methods in the
    plugin's module."""

    #: the connector service (``clickup``); also the toolbox id
    service: ClassVar[str]
    #: the service as the user knows it (``ClickUp``); part of the tool names
    label: ClassVar[str]
    #: what the service calls a task (``task``, ``issue``)
    noun: ClassVar[str] = "task"
    #: what the service calls a task that is done (``closed``, ``done``)
    done: ClassVar[str] = "closed"
    #: the vendor field shown before a task's title (a custom id, an issue key), if any
    key_field: ClassVar[str] = ""
    #: the search tool's description up to its common end (what it searches, scoped how)
    search_help: ClassVar[str]
    #: how long a search may take, in seconds
    search_timeout_s: ClassVar[float] = 60
    #: what ``query`` takes
    query_help: ClassVar[str]
    #: the search's scope argument
    search_in: ClassVar[TaskArg]
    #: the read tool's task argument
    read_ref: ClassVar[TaskArg]
    #: the write tool's argument naming the task to update
    update_ref: ClassVar[TaskArg]
    #: the write tool's argument naming where a new task goes
    create_in: ClassVar[TaskArg]
    #: what ``status`` takes
    status_help: ClassVar[str]
    #: what ``priority`` takes (``None``: no description)
    priority_help: ClassVar[str | None] = None

    def __init__(self) -> None:
        stem = self.label.replace(" ", "") + self.noun.title()
        self.search_name = f"search{stem}s"
        self.read_name = f"read{stem}"
        self.write_name = f"write{stem}"
        self.search_args, self.read_args, self.write_args = self._arg_models()
        self._barrier = write_barrier(
            f"NYLA_{self.service.upper()}_WRITE",
            [self.write_name],
            f"changing {self.label}",
            f"tell the user what to change in {self.label}",
        )

    # ---- what a service may change ----------------------------------------------------

    def structured(self, args: TaskSearchArgs) -> bool:
        """Whether this search goes to the structured task search (``search_tasks``) rather
        than the service's own word search; by default when a filter is set."""
        return args.filtered

    def search_scope(self, args: TaskSearchArgs) -> str:
        """The scope a word search runs in (by default the scope argument as given)."""
        return args.container

    def line(self, item: Item) -> str:
        """One inline line of a task: its key and title, status, assignee, due date, id."""
        key = item.extra.get("vendor", {}).get(self.key_field) if self.key_field else ""
        return inline_line(item.model_copy(update={"title": f"{key or ''} {item.title}".strip()}))

    # ---- the plugin's hooks -----------------------------------------------------------

    @hookimpl
    def nyla_toolboxes(self) -> list[Toolbox]:
        """The toolbox (hook ``nyla_toolboxes``)."""
        return [self.toolbox()]

    @hookimpl
    def nyla_before_tool_call(
        self, tool: Tool, arguments: dict[str, Any], context: ToolContext
    ) -> ToolResult | None:
        """The write barrier (hook ``nyla_before_tool_call``): ``NYLA_<SERVICE>_WRITE=off``
        denies every call of the write tool."""
        return self._barrier(tool, arguments, context)

    # ---- the toolbox ------------------------------------------------------------------

    def toolbox(self) -> Toolbox:
        """The toolbox: off by default, switched on by a connection of the service."""
        return Toolbox(
            id=self.service,
            label=self.label,
            description=f"Search, read, create and update the user's {self.label} {self.noun}s.",
            tools=self.tools(),
            default_active=False,
            requires_connection=self.service,
        )

    def tools(self) -> list[Tool]:
        """The three tools: search and read are read-only, write is not."""
        on = with_connection
        noun, label = self.noun, self.label
        return [
            Tool.from_model(
                self.search_name,
                f"{self.search_help} One line per {noun} with status, assignee and due date: "
                f"enough to answer most questions without reading {noun}s.",
                self.search_args,
                on(self.service, need="search_tasks", label=label)(self.search),
                read_only=True,
                timeout_s=self.search_timeout_s,
            ),
            Tool.from_model(
                self.read_name,
                f"Read one {label} {noun}: description, comments and attachments.",
                self.read_args,
                on(self.service, need="read_task", label=label)(self.read),
                read_only=True,
                timeout_s=60,
            ),
            Tool.from_model(
                self.write_name,
                f"Create {_a(label)} {noun} ({self.create_in.name} + title) or update one "
                f"({self.update_ref.name} + what changes: title, description, status, due, "
                "assignee, priority, a comment).",
                self.write_args,
                on(self.service, need=_write_need, label=label)(self.write),
                read_only=False,
                timeout_s=60,
            ),
        ]

    # ---- the handlers -----------------------------------------------------------------

    async def search(
        self, args: TaskSearchArgs, ctx: ToolContext, s: ConnectionSession
    ) -> ToolResult:
        """Tasks by words and the structured filters, due date first."""
        if args.due_from and args.due_to and args.due_from > args.due_to:
            return ToolResult.fail("dueFrom is after dueTo", "INVALID_VALUE", field="dueFrom")
        if self.structured(args):
            query = TaskQuery(
                text=args.query, container=args.container, mine=args.mine,
                open_only=args.open_only, due_from=args.due_from, due_to=args.due_to,
            )  # fmt: skip
            page = await s.adapter.search_tasks(s, query, args.cursor)
        else:
            page = await s.adapter.search(s, args.query, self.search_scope(args), args.cursor)
        return self._listing(page)

    def _listing(self, page: ItemPage) -> ToolResult:
        data = {"items": [i.to_wire() for i in page.items], "cursor": page.cursor}
        if not page.items:
            more = f"; more pages: pass cursor={page.cursor!r}" if page.cursor else ""
            return ToolResult.ok(f"no {self.noun}s match{more}", data=data)
        hint = (
            f"(task lines are complete: read {_a(self.noun)} only for its description and comments)"
        )
        lines = [self.line(i) for i in page.items] + [hint]
        if page.cursor:
            lines.append(f"more results: pass cursor={page.cursor!r}")
        return ToolResult.ok("\n".join(lines), data=data)

    async def read(self, args: TaskReadArgs, ctx: ToolContext, s: ConnectionSession) -> ToolResult:
        """One task with description, comments and attachments."""
        detail = await s.adapter.read_task(s, args.task)
        lines = [self.line(detail.item)]
        if detail.item.url:
            lines.append(f"link: {detail.item.url}")
        lines += ["", detail.description or "(no description)"]
        for c in detail.comments:
            when = c.created.isoformat(timespec="minutes") if c.created else "?"
            lines.append(f"- {c.author} ({when}): {c.text}")
        lines += [f"attachment: {inline_line(a)}" for a in detail.attachments]
        return ToolResult.ok("\n".join(lines), data=detail.to_wire())

    async def write(
        self, args: TaskWriteArgs, ctx: ToolContext, s: ConnectionSession
    ) -> ToolResult:
        """Create (``container``) or update (``task``) a task."""
        if bool(args.task) == bool(args.container):
            return ToolResult.fail(
                f"pass either {self.update_ref.name} (to update) or {self.create_in.name} "
                "(to create)",
                "MISSING_FIELD",
                field=self.update_ref.name,
                suggestion=f"take the {self.noun} id from {self.search_name}",
            )
        change = TaskChange(
            **args.model_dump(include=set(TaskChange.model_fields), exclude_none=True)
        )
        if args.task and not change.model_dump(exclude_none=True):
            return ToolResult.fail("nothing to change", "MISSING_FIELD", field="status")
        if args.container:
            item, verb = await s.adapter.create_task(s, args.container, change), "created"
        else:
            item, verb = await s.adapter.update_task(s, args.task, change), "updated"
        return ToolResult.ok(f"{verb}: {self.line(item)}", data={"item": item.to_wire()})

    # ---- the argument models the model sees -------------------------------------------

    def _arg_models(
        self,
    ) -> tuple[type[TaskSearchArgs], type[TaskReadArgs], type[TaskWriteArgs]]:
        """The three argument models with the service's names and descriptions."""
        noun = self.noun
        conn: tuple[Any, Any] = (str | None, connection_field(self.label))
        search = create_model(
            f"{self.label}SearchArgs".replace(" ", ""),
            __base__=TaskSearchArgs,
            __doc__=f"Arguments of ``{self.search_name}``.",
            connection_id=conn,
            query=(str, Field(default="", description=self.query_help)),
            container=(str, _renamed(self.search_in, default="")),
            mine=(bool, Field(default=False, description=f"Only {noun}s assigned to the user.")),
            open_only=(
                bool,
                Field(
                    default=False, alias="openOnly", description=f"Leave out {self.done} {noun}s."
                ),
            ),
        )
        read = create_model(
            f"{self.label}ReadArgs".replace(" ", ""),
            __base__=TaskReadArgs,
            __doc__=f"Arguments of ``{self.read_name}``.",
            connection_id=conn,
            task=(str, _renamed(self.read_ref, min_length=1)),
        )
        update, create = self.update_ref.name, self.create_in.name
        write = create_model(
            f"{self.label}WriteArgs".replace(" ", ""),
            __base__=TaskWriteArgs,
            __doc__=f"Arguments of ``{self.write_name}``: {_a(f'``{update}``')} updates it, "
            f"{_a(f'``{create}``')} creates one.",
            connection_id=conn,
            task=(str | None, _renamed(self.update_ref, default=None)),
            container=(str | None, _renamed(self.create_in, default=None)),
            status=(str | None, Field(default=None, description=self.status_help)),
            priority=(str | None, Field(default=None, description=self.priority_help)),
        )
        return search, read, write


def _renamed(arg: TaskArg, **kw: Any) -> Any:
    """A field the model knows under ``arg.name``, described by ``arg.description``."""
    return Field(alias=arg.name, description=arg.description, **kw)


def _write_need(args: TaskWriteArgs) -> str:
    """The task capability a write needs."""
    return "create_task" if args.container else "update_task"
