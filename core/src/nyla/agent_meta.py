"""Meta tools the runtime adds beside the toolboxes (``requestToolbox``), for the catalogs.

The agent runtime defines them; this indirection lets ``nyla tools list`` show them without
importing the runtime when it is not part of the build.
"""

from __future__ import annotations

from typing import Any


def meta_tools(host: Any) -> list[Any]:
    """The runtime's meta tools for a host (empty when the runtime is not installed)."""
    try:
        from nyla.agent.toolboxes import request_toolbox_tool
    except ModuleNotFoundError:
        return []
    tool = request_toolbox_tool(sorted(host.toolboxes))
    tool.toolbox = None
    return [tool]
