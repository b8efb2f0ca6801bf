"""The ``trustee`` workflow method: ``extractFromFiles`` reads receipts and statements and
extracts booking candidates for a trustee feature instance through the AI service, saved as a
JSON file the run (or a workflow's next node) reads; nothing is booked yet."""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from nyla.sdk import AiCallRequest, Message, OperationType, Role, ToolContext, ToolResult
from nyla.sdk.actions import (
    Action,
    ActionParams,
    ActionResult,
    DocumentList,
    FeatureInstanceId,
    Method,
)

#: the feature whose instances the method works on
FEATURE_CODE = "trustee"

#: characters of one file's text the model gets at most
FILE_TEXT_LIMIT = 20_000

SYSTEM = (
    "You extract booking candidates for Swiss SME accounting from the user's documents "
    "(receipts, invoices, bank statements). Answer with a JSON array only; each element "
    '{"date": "YYYY-MM-DD", "description": str, "amount": number (CHF, negative for '
    'money out), "account": str or null, "source": the document name}.'
)


class ExtractFromFilesParams(ActionParams):
    """Parameters of ``trustee.extractFromFiles``."""

    file_ids: DocumentList = Field(
        min_length=1,
        description="The documents to read: file ids, file references or docItem references.",
    )
    feature_instance_id: FeatureInstanceId | None = Field(
        None, description="The trustee instance; defaults to the run's."
    )
    instructions: str | None = Field(None, description="Extra guidance for the extraction.")


class BookingCandidate(BaseModel):
    """One extracted booking candidate."""

    date: dt.date
    description: str
    amount: float
    account: str | None = None
    source: str | None = None


def parse_candidates(answer: str) -> tuple[list[BookingCandidate], int]:
    """The candidates in a model's answer (the first JSON array in it) and how many
    elements were left out because they did not fit."""
    match = re.search(r"\[.*\]", answer, re.DOTALL)
    try:
        items = json.loads(match.group(0)) if match else []
    except json.JSONDecodeError:
        items = []
    kept: list[BookingCandidate] = []
    for item in items if isinstance(items, list) else []:
        try:
            kept.append(BookingCandidate.model_validate(item))
        except ValidationError:
            continue
    return kept, (len(items) if isinstance(items, list) else 0) - len(kept)


async def extract_from_files(
    params: ExtractFromFilesParams, ctx: ToolContext
) -> ActionResult | ToolResult:
    """Read the files, ask the model for booking candidates, save them as a JSON file (the
    action's document: it comes back into the conversation as a chat document)."""
    instance = params.feature_instance_id or ctx.run.feature_instance_id
    if not instance:
        return ToolResult.fail(
            "no feature instance: pass featureInstanceId (or run in a trustee instance)",
            "MISSING_FIELD",
            field="featureInstanceId",
        )
    files = ctx.services.files
    parts = []
    for file_id in params.file_ids:
        item = await files.get(file_id, ctx.run)
        text = await files.read_text(file_id, ctx.run)
        parts.append(f"## {item.name if item else file_id}\n{text[:FILE_TEXT_LIMIT]}")
    guidance = f"\n\nGuidance: {params.instructions}" if params.instructions else ""
    response = await ctx.services.ai.call(
        AiCallRequest(
            operation=OperationType.DATA_EXTRACT,
            messages=[
                Message(role=Role.SYSTEM, content=SYSTEM + guidance),
                Message(role=Role.USER, content="\n\n".join(parts)),
            ],
            context=ctx.run,
            max_cost_chf=ctx.remaining_budget_chf,
            neutralization=ctx.neutralization,
        )
    )
    ctx.charge(response.cost_chf)
    candidates, dropped = parse_candidates(response.content)
    payload: dict[str, Any] = {
        "featureInstanceId": instance,
        "sourceFileIds": params.file_ids,
        "candidates": [c.model_dump(mode="json") for c in candidates],
    }
    saved = await files.save(
        "trustee-booking-candidates.json",
        json.dumps(payload, indent=2).encode(),
        ctx.run,
        mime_type="application/json",
        tags=["trustee", "booking-candidates"],
        dedupe=False,
    )
    return ActionResult(
        text=f"{len(candidates)} booking candidates from {len(params.file_ids)} files saved as "
        f"file {saved.id}" + (f" ({dropped} malformed left out)" if dropped else ""),
        data={**payload, "fileId": saved.id, "dropped": dropped},
        documents=[saved.id],
    )


def trustee_method() -> Method:
    """The ``trustee`` method (its action tools come on in trustee feature runs)."""
    return Method(
        name="trustee",
        description="Trustee accounting steps for workflows.",
        feature_code=FEATURE_CODE,
        actions=[
            Action(
                name="extractFromFiles",
                description="Extract booking candidates (date, description, amount CHF, "
                "account) from receipts and statements; saves them as a JSON file.",
                params=ExtractFromFilesParams,
                handler=extract_from_files,
                writes=True,
            )
        ],
    )
