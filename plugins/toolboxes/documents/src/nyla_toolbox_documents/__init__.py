"""nyla-toolbox-documents: tools inside and for documents over the Unified Document Model —
structure, content objects and embedded items of PDF, DOCX, XLSX, PPTX, HTML, Markdown,
e-mail and ZIP files; rendering to PDF, DOCX, XLSX, PPTX and HTML; charts."""

from __future__ import annotations

from nyla.sdk import Toolbox, hookimpl
from nyla_toolbox_documents.chart import chart_tools
from nyla_toolbox_documents.image_tool import image_tools
from nyla_toolbox_documents.read_tools import read_tools
from nyla_toolbox_documents.render import render_tools
from nyla_toolbox_documents.section_tool import section_tools

__all__ = ["documents_toolbox", "nyla_toolboxes"]


def documents_toolbox() -> Toolbox:
    """The ``documents`` toolbox."""
    return Toolbox(
        id="documents",
        label="Documents",
        description="Look inside documents (structure, sections, tables, embedded items), "
        "render documents and charts.",
        tools=[*read_tools(), *section_tools(), *render_tools(), *chart_tools(), *image_tools()],
        default_active=True,
    )


@hookimpl
def nyla_toolboxes() -> list[Toolbox]:
    """The documents toolbox."""
    return [documents_toolbox()]
