"""nyla-toolbox-web: the web as agent tools — ``webSearch`` through the AI service's search
models and ``readUrl`` behind the server's egress guard."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nyla.sdk import Toolbox, hookimpl
from nyla_toolbox_web.tools import web_tools

if TYPE_CHECKING:
    from nyla_toolbox_web.fetch import PageFetcher

__all__ = ["nyla_toolboxes", "web_toolbox"]


def web_toolbox(fetcher: PageFetcher | None = None) -> Toolbox:
    """The ``web`` toolbox; ``fetcher`` (a :class:`~nyla_toolbox_web.fetch.PageFetcher`)
    replaces the configured page fetcher (tests)."""
    return Toolbox(
        id="web",
        label="Web",
        description="Search the web and read web pages.",
        tools=web_tools(fetcher),
        default_active=True,
    )


@hookimpl
def nyla_toolboxes() -> list[Toolbox]:
    """The web toolbox."""
    return [web_toolbox()]
