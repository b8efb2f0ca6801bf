"""``readSection``: one section of an indexed file, verbatim as the knowledge store holds it
(scope-checked and cached there by the file's version)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from nyla.sdk import FileAccessError, Tool, ToolContext, ToolResult

#: characters of section text one answer carries at most
MAX_SECTION_CHARS = 40_000


class SectionArgs(BaseModel):
    """Arguments of ``readSection``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    file_id: str = Field(alias="fileId", description="Id of an indexed file.")
    section: str = Field(
        min_length=1,
        description="A heading path ('Setup > Install'), a heading, or the section's number "
        "in browseContainer's or the index's section list (1 = first).",
    )


async def read_section(args: SectionArgs, ctx: ToolContext) -> ToolResult:
    """One section of an indexed file with its subsections and tables."""
    try:
        found = await ctx.services.knowledge.read_section(args.file_id, args.section, ctx.run)
    except FileAccessError as exc:
        return ToolResult.fail(str(exc), "NOT_FOUND", field="fileId", suggestion="listFiles")
    except ValueError as exc:
        return ToolResult.fail(str(exc), "INVALID_VALUE", field="section")
    text = found.text
    cut = len(text) > MAX_SECTION_CHARS
    if cut:
        text = text[:MAX_SECTION_CHARS] + "\n\n[... cut: read its subsections one by one]"
    data = {"fileId": found.file_id, "section": found.section, "chars": len(found.text)}
    return ToolResult.ok(text, data={**data, "truncated": cut})


def section_tools() -> list[Tool]:
    """``readSection``."""
    return [
        Tool.from_model(
            "readSection",
            "Read one section of an indexed file verbatim (with its subsections and tables), "
            "by heading path like 'Setup > Install' or by number.",
            SectionArgs,
            read_section,
            read_only=True,
        )
    ]
