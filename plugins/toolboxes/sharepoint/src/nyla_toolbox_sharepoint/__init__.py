"""nyla-toolbox-sharepoint: find sites and libraries, search documents, read a document into
the user's files, over the user's Microsoft 365 connection (through the kernel)."""

from __future__ import annotations

from nyla.sdk import Toolbox, hookimpl
from nyla_toolbox_sharepoint.tools import sharepoint_tools

__all__ = ["nyla_toolboxes", "sharepoint_toolbox"]


def sharepoint_toolbox() -> Toolbox:
    """The ``sharepoint`` toolbox."""
    return Toolbox(
        id="sharepoint",
        label="SharePoint",
        description="Find SharePoint sites and libraries, search and read their documents.",
        tools=sharepoint_tools(),
        default_active=False,
        requires_connection="msft",
    )


@hookimpl
def nyla_toolboxes() -> list[Toolbox]:
    """The SharePoint toolbox."""
    return [sharepoint_toolbox()]
