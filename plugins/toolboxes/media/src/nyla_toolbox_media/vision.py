"""``describeImage``: one of the user's images looked at by an ``imageAnalyse`` model."""

from __future__ import annotations

import base64

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from nyla.sdk import (
    AiCallRequest,
    ImagePart,
    Message,
    ModelNotAvailableError,
    NeutralizationError,
    OperationType,
    ProviderError,
    Role,
    TextPart,
    Tool,
    ToolContext,
    ToolResult,
)

#: image types vision models take
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
#: bytes of one image sent at most (the vendors' limits are about 20 MB)
MAX_IMAGE_BYTES = 20_000_000
SYSTEM = (
    "You look at one image for the user. Describe what it shows, precisely and briefly; "
    "read out text that matters; answer the user's question when there is one. Say so when "
    "something is not legible or is blacked out."
)


class DescribeImageArgs(BaseModel):
    """Arguments of ``describeImage``."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)

    file_id: str = Field(min_length=1, description="The image file's id (PNG, JPEG, GIF, WebP).")
    question: str | None = Field(
        default=None, max_length=2000, description="What to find out about the image."
    )


async def describe_image(args: DescribeImageArgs, ctx: ToolContext) -> ToolResult:
    """Read the image, ask the model, charge the run."""
    item = await ctx.services.files.get(args.file_id, ctx.run)
    if item is None:
        return ToolResult.fail(f"no file {args.file_id!r}", "NOT_FOUND", field="fileId")
    mime = (item.mime_type or "").split(";")[0].strip().lower()
    if mime not in IMAGE_TYPES:
        return ToolResult.fail(
            f"{item.name} is {mime or 'of no known type'}, not an image "
            f"({', '.join(sorted(IMAGE_TYPES))})",
            "UNSUPPORTED_TYPE",
            field="fileId",
        )
    content = await ctx.services.files.read_bytes(args.file_id, ctx.run)
    if len(content) > MAX_IMAGE_BYTES:
        return ToolResult.fail(
            f"{item.name} has {len(content)} bytes, more than {MAX_IMAGE_BYTES}", "TOO_LARGE"
        )
    question = args.question or "Describe this image."
    request = AiCallRequest(
        operation=OperationType.IMAGE_ANALYSE,
        messages=[
            Message(role=Role.SYSTEM, content=SYSTEM),
            Message(
                role=Role.USER,
                content=[
                    TextPart(text=question),
                    ImagePart(data_base64=base64.b64encode(content).decode(), mime_type=mime),
                ],
            ),
        ],
        context=ctx.run,
        max_cost_chf=ctx.remaining_budget_chf,
        neutralization=ctx.neutralization,
    )
    try:
        response = await ctx.services.ai.call(request)
    except NeutralizationError as exc:
        return ToolResult.fail(str(exc), "NEUTRALIZATION_REQUIRED")
    except ModelNotAvailableError as exc:
        return ToolResult.fail(str(exc), "NO_VISION_MODEL", hint="an imageAnalyse model is needed")
    except ProviderError as exc:
        return ToolResult.fail(str(exc), "ANALYSIS_FAILED")
    ctx.charge(response.cost_chf)
    return ToolResult.ok(
        response.content.strip(),
        data={"fileId": args.file_id, "model": response.model, "costChf": response.cost_chf},
    )


def vision_tools() -> list[Tool]:
    """``describeImage``."""
    return [
        Tool.from_model(
            "describeImage",
            "Look at one of the user's images (by file id) and describe it or answer a "
            "question about it.",
            DescribeImageArgs,
            describe_image,
            read_only=True,
            timeout_s=120,
        )
    ]
