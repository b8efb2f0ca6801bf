"""The MCP servers as toolboxes of a run: the plugin registers one
:class:`~nyla.sdk.run_toolboxes.RunToolboxes`, bound to the kernel's database, which answers
when a run starts the toolboxes ``mcp:<name>`` of the run user's own servers and their
mandate's (one query). A server added on another process or machine, or while ``nyla
serve`` runs, is so in the next run without a restart."""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from pydantic import PrivateAttr

from nyla.sdk import RunContext, Toolbox
from nyla.sdk.run_toolboxes import RunToolboxes

if TYPE_CHECKING:
    # imported when bound, not at discovery: ``nyla --help`` imports no database layer
    from nyla_toolbox_mcp.servers import ServerStore

#: toolboxes built (their tools' schema validators) and kept by their server's configuration
CACHED = 256


class McpToolboxes(RunToolboxes):
    """The run user's MCP servers, each the toolbox ``mcp:<name>`` (their own server of a
    name before their mandate's)."""

    _store: ServerStore | None = PrivateAttr(default=None)
    _built: OrderedDict[tuple[Any, ...], Toolbox] = PrivateAttr(default_factory=OrderedDict)

    def bind(self, db: Any) -> None:
        """Read the servers from the kernel's database ``db``."""
        from nyla_toolbox_mcp.servers import ServerStore

        self.use(ServerStore(db))

    def use(self, store: ServerStore) -> None:
        """Read the servers from ``store``."""
        self._store = store
        self._built.clear()

    async def for_run(self, context: RunContext) -> list[Toolbox]:
        """The toolboxes of the servers ``context``'s user and mandate have."""
        if self._store is None:
            raise RuntimeError("the MCP toolboxes are not bound to a database")
        rows = await self._store.run_rows(context.user_id or "", context.mandate_id)
        return [self._toolbox(row) for row in rows]

    def _toolbox(self, row: Any) -> Toolbox:
        """The toolbox of a server's row, opened and built once per change of the row."""
        assert self._store is not None
        key = (row.owner_scope, row.owner_id, row.name, row.updated_at)
        toolbox = self._built.get(key)
        if toolbox is None:
            from nyla_toolbox_mcp.tools import server_toolbox

            server = self._store.open(row.config)
            toolbox = self._built[key] = server_toolbox(server, self._store)
            while len(self._built) > CACHED:
                self._built.popitem(last=False)
        self._built.move_to_end(key)
        return toolbox
