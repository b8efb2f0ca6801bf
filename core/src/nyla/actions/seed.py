"""The kernel's own workflow methods, contributed through ``nyla_methods`` like any plugin's:
``ai`` (process, summarizeDocument) through the AI service, and ``context`` (extractContent,
neutralizeData) through the knowledge store's extraction and the neutralization gate."""

from __future__ import annotations

from pydantic import Field, model_validator

from nyla.hookspecs import hookimpl
from nyla.knowledge.extract import extract
from nyla.models.actions import Action, ActionParams, FileId, Method
from nyla.models.ai import OperationType
from nyla.models.tools import ToolContext, ToolResult
from nyla.tools._args import guarded
from nyla.tools.ai import SUMMARY_INPUT_LIMIT, ai_text


class ProcessParams(ActionParams):
    """Parameters of ``ai.process``."""

    prompt: str = Field(min_length=1, description="What the model should do.")
    file_ids: list[FileId] = Field(
        default_factory=list, description="Files whose text the model gets with the prompt."
    )


@guarded
async def process(params: ProcessParams, ctx: ToolContext) -> ToolResult:
    parts = [params.prompt]
    for file_id in params.file_ids:
        item = await ctx.services.files.get(file_id, ctx.run)
        name = item.name if item is not None else file_id
        parts.append(f"## {name}\n{await ctx.services.files.read_text(file_id, ctx.run)}")
    answer = await ai_text(
        ctx,
        OperationType.DATA_ANALYSE,
        "Carry out the user's instruction on the material given with it.",
        "\n\n".join(parts)[:SUMMARY_INPUT_LIMIT],
    )
    return ToolResult.ok(answer, data={"files": len(params.file_ids)})


class SummarizeDocumentParams(ActionParams):
    """Parameters of ``ai.summarizeDocument``."""

    file_id: FileId = Field(description="The document to summarize.")
    max_words: int = Field(150, ge=10, le=2000, description="Upper bound of the length.")


@guarded
async def summarize_document(params: SummarizeDocumentParams, ctx: ToolContext) -> ToolResult:
    text = await ctx.services.files.read_text(params.file_id, ctx.run)
    summary = await ai_text(
        ctx,
        OperationType.DATA_ANALYSE,
        f"Summarize the user's document in at most {params.max_words} words. Keep key facts "
        "and numbers.",
        text[:SUMMARY_INPUT_LIMIT],
    )
    return ToolResult.ok(summary, data={"fileId": params.file_id})


class ExtractContentParams(ActionParams):
    """Parameters of ``context.extractContent``."""

    file_id: FileId = Field(description="The file to extract content from.")
    max_objects: int = Field(200, ge=1, le=5000, description="Content objects returned at most.")


@guarded
async def extract_content(params: ExtractContentParams, ctx: ToolContext) -> ToolResult:
    files = ctx.services.files
    item = await files.get(params.file_id, ctx.run)
    if item is None:
        return ToolResult.fail(f"file {params.file_id!r} not found", "NOT_FOUND", field="fileId")
    document = extract(item.name, await files.read_bytes(params.file_id, ctx.run), item.mime_type)
    objects = document.objects[: params.max_objects]
    text = "\n\n".join(o.text for o in objects)
    return ToolResult.ok(
        text,
        data={
            "kind": document.kind,
            "objects": [o.to_wire() for o in objects],
            "total": len(document.objects),
        },
    )


class NeutralizeDataParams(ActionParams):
    """Parameters of ``context.neutralizeData``."""

    text: str | None = Field(None, description="Text to neutralize.")
    file_id: FileId | None = Field(None, description="Or: a file whose text to neutralize.")

    @model_validator(mode="after")
    def _one_source(self) -> NeutralizeDataParams:
        if not (self.text or self.file_id):
            raise ValueError("give text or fileId")
        return self


@guarded
async def neutralize_data(params: NeutralizeDataParams, ctx: ToolContext) -> ToolResult:
    text = params.text or await ctx.services.files.read_text(params.file_id or "", ctx.run)
    neutral, session = ctx.services.ai.neutralize_text(
        text, context=ctx.run, session=ctx.neutralization
    )
    found = sum(1 for p in session.table() if p["placeholder"] in neutral)
    return ToolResult.ok(neutral, data={"placeholders": found})


AI = Method(
    name="ai",
    description="Model calls through the AI service (pricing, budget and neutralization apply).",
    actions=[
        Action(
            name="process",
            description="Carry out an instruction with a model, optionally on files' text.",
            params=ProcessParams,
            handler=process,
        ),
        Action(
            name="summarizeDocument",
            description="Summarize one document.",
            params=SummarizeDocumentParams,
            handler=summarize_document,
        ),
    ],
)

CONTEXT = Method(
    name="context",
    description="Content of documents: extraction without a model, and neutralization.",
    actions=[
        Action(
            name="extractContent",
            description="Extract a file's content objects (sections, pages, tables).",
            params=ExtractContentParams,
            handler=extract_content,
        ),
        Action(
            name="neutralizeData",
            description="A text (or a file's text) with personal data replaced by placeholders.",
            params=NeutralizeDataParams,
            handler=neutralize_data,
        ),
    ],
)


@hookimpl
def nyla_methods() -> list[Method]:
    """The kernel's ``ai`` and ``context`` methods."""
    return [AI, CONTEXT]
