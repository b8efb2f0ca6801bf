"""The ``ai`` toolbox: language detection, translation, summarization and neutralization,
all through the AI service (``ctx.services.ai``) so pricing, budget and neutralization apply.

Each call uses the run's remaining budget (``ctx.remaining_budget_chf``) and placeholder
session, and charges its cost to the run (``ctx.charge``). ``summarizeContent``
reads documents by ``documentList`` (``docItem:`` / ``docList:`` references, any of the four
accepted shapes) or by file id.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from nyla.hookspecs import hookimpl
from nyla.models.ai import AiCallRequest, AiCallResponse, Message, OperationType, Role
from nyla.models.tools import Tool, Toolbox, ToolContext, ToolResult
from nyla.tools._args import Args, guarded

#: Characters of document text one summarization call takes at most.
SUMMARY_INPUT_LIMIT = 60_000


async def ai_text(ctx: ToolContext, operation: OperationType, system: str, user: str) -> str:
    """One AI service call on behalf of a tool; its cost is charged to the run."""
    response: AiCallResponse = await ctx.services.ai.call(
        AiCallRequest(
            operation=operation,
            messages=[
                Message(role=Role.SYSTEM, content=system),
                Message(role=Role.USER, content=user),
            ],
            context=ctx.run,
            max_cost_chf=ctx.remaining_budget_chf,
            neutralization=ctx.neutralization,
        )
    )
    ctx.charge(response.cost_chf)
    return response.content.strip()


class TextArgs(Args):
    text: str = Field(min_length=1, description="The text.")


@guarded
async def detect_language(args: TextArgs, ctx: ToolContext) -> ToolResult:
    answer = await ai_text(
        ctx,
        OperationType.DATA_ANALYSE,
        "Identify the language of the user's text. Answer with the ISO 639-1 code only "
        "(e.g. en, de, fr).",
        args.text[:4000],
    )
    code = answer.strip().strip(".").split()[0].lower() if answer.strip() else "und"
    return ToolResult.ok(code, data={"language": code})


class TranslateArgs(Args):
    text: str = Field(min_length=1, description="The text to translate.")
    target_language: str = Field(description="Target language (name or ISO code).")
    source_language: str | None = Field(None, description="Source language when known.")


@guarded
async def translate_text(args: TranslateArgs, ctx: ToolContext) -> ToolResult:
    source = f" from {args.source_language}" if args.source_language else ""
    translated = await ai_text(
        ctx,
        OperationType.DATA_GENERATE,
        f"Translate the user's text{source} into {args.target_language}. Keep formatting, "
        "numbers and placeholders such as [EMAIL_1] unchanged. Answer with the translation only.",
        args.text,
    )
    return ToolResult.ok(translated, data={"targetLanguage": args.target_language})


class SummarizeArgs(Args):
    text: str | None = Field(None, description="Text to summarize.")
    document_list: Any = Field(
        None,
        description='Documents to summarize: ["docItem:<id>", ...] or "docList:<label>".',
    )
    file_ids: list[str] | None = Field(None, description="Files to summarize, by file id.")
    max_words: int = Field(150, ge=10, le=2000, description="Upper bound of the summary length.")
    focus: str | None = Field(None, description="What the summary should concentrate on.")

    @model_validator(mode="after")
    def _one_source(self) -> SummarizeArgs:
        if not (self.text or self.document_list or self.file_ids):
            raise ValueError("give text, documentList or fileIds")
        return self


@guarded
async def summarize_content(args: SummarizeArgs, ctx: ToolContext) -> ToolResult:
    files = ctx.services.files
    parts: list[str] = []
    if args.text:
        parts.append(args.text)
    file_ids = list(args.file_ids or [])
    if args.document_list:
        from nyla.files.bridge import resolve_documents

        documents, missing = resolve_documents(ctx.workflow, args.document_list)
        if missing:
            return ToolResult.fail(
                f"no document in this workflow matches {', '.join(missing)}",
                "NOT_FOUND",
                field="documentList",
                suggestion="use the docItem reference a tool returned, or fileIds",
            )
        file_ids.extend(d.file_id for d in documents)
    for file_id in file_ids:
        item = await files.get(file_id, ctx.run)
        if item is None:
            return ToolResult.fail(f"file {file_id!r} not found", "NOT_FOUND", field="fileIds")
        parts.append(f"## {item.name}\n{await files.read_text(file_id, ctx.run)}")
    source = "\n\n".join(parts)[:SUMMARY_INPUT_LIMIT]
    focus = f" Concentrate on: {args.focus}." if args.focus else ""
    summary = await ai_text(
        ctx,
        OperationType.DATA_ANALYSE,
        f"Summarize the user's content in at most {args.max_words} words.{focus} Keep key "
        "facts and numbers.",
        source,
    )
    return ToolResult.ok(summary, data={"sources": len(parts)})


class NeutralizeArgs(Args):
    text: str | None = Field(None, description="Text to neutralize.")
    file_id: str | None = Field(None, description="Or: a file whose text to neutralize.")

    @model_validator(mode="after")
    def _one_source(self) -> NeutralizeArgs:
        if not (self.text or self.file_id):
            raise ValueError("give text or fileId")
        return self


@guarded
async def neutralize_data(args: NeutralizeArgs, ctx: ToolContext) -> ToolResult:
    text = args.text or await ctx.services.files.read_text(args.file_id or "", ctx.run)
    neutral, session = ctx.services.ai.neutralize_text(
        text, context=ctx.run, session=ctx.neutralization
    )
    found = sum(1 for p in session.table() if p["placeholder"] in neutral)
    return ToolResult.ok(
        neutral, data={"placeholders": found, "original": "unchanged (non-destructive)"}
    )


def ai_tools() -> list[Tool]:
    """The tools of the ``ai`` toolbox."""
    return [
        Tool.from_model(
            "detectLanguage",
            "Detect the language of a text (ISO 639-1 code).",
            TextArgs,
            detect_language,
            read_only=True,
        ),
        Tool.from_model(
            "translateText",
            "Translate a text into another language.",
            TranslateArgs,
            translate_text,
            read_only=True,
        ),
        Tool.from_model(
            "summarizeContent",
            "Summarize a text, documents (documentList: docItem:/docList: references) or files.",
            SummarizeArgs,
            summarize_content,
            read_only=True,
        ),
        Tool.from_model(
            "neutralizeData",
            "Return a text (or a file's text) with personal data replaced by placeholders; the "
            "original stays unchanged.",
            NeutralizeArgs,
            neutralize_data,
            read_only=True,
        ),
    ]


@hookimpl
def nyla_toolboxes() -> list[Toolbox]:
    """The kernel's ``ai`` toolbox (always active)."""
    return [
        Toolbox(
            id="ai",
            label="Language and AI helpers",
            description="Detect language, translate, summarize and neutralize through the AI "
            "service.",
            tools=ai_tools(),
            default_active=True,
        )
    ]
