"""``generateImage``: images from a prompt through the AI service (its ``imageGenerate``
models; the prompt neutralized, the price preflighted against the run's remaining budget and
charged to the run), each saved as a file and chat document."""

from __future__ import annotations

import base64
import binascii
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from nyla.sdk import (
    BudgetExceeded,
    ModelNotAvailableError,
    NeutralizationError,
    ProviderError,
    Tool,
    ToolContext,
    ToolResult,
    download_name,
)
from nyla.sdk.documents import save_tool_file
from nyla_toolbox_documents.render_images import sniff


class ImageArgs(BaseModel):
    """Arguments of ``generateImage``."""

    model_config = ConfigDict(extra="forbid")

    prompt: str = Field(min_length=1, max_length=4000, description="What the image shows.")
    n: int = Field(default=1, ge=1, le=4, description="How many images.")
    size: Literal["1024x1024", "1024x1536", "1536x1024"] = "1024x1024"
    name: str = Field(default="image", description="File name without extension.")


async def generate_image(args: ImageArgs, ctx: ToolContext) -> ToolResult:
    """Ask the AI service ``n`` times and save each image."""
    base = download_name(args.name, "image").removesuffix(".png")
    saved = []
    for number in range(1, args.n + 1):
        try:
            parts = await ctx.services.ai.generate_image(
                args.prompt,
                context=ctx.run,
                size=args.size,
                max_cost_chf=ctx.remaining_budget_chf,
                on_cost=ctx.charge,
            )
        except (ModelNotAvailableError, BudgetExceeded, NeutralizationError) as exc:
            return ToolResult.fail(str(exc), "NOT_AVAILABLE")
        except ProviderError as exc:
            return ToolResult.fail(str(exc), "PROVIDER_ERROR")
        content = _png(parts[0].data_base64 if parts else None)
        if content is None:
            return ToolResult.fail(
                "the image model returned no image data (only a link, or nothing)",
                "PROVIDER_ERROR",
            )
        suffix = f"-{number}" if args.n > 1 else ""
        name = f"{base}{suffix}.png"
        saved.append(
            await save_tool_file(ctx, name, content, "image/png", label=f"generateImage:{base}")
        )
    text = "\n".join(s.summary for s in saved)
    return ToolResult.ok(text, data={"files": [s.to_wire() for s in saved]})


def _png(data: str | None) -> bytes | None:
    if not data:
        return None
    try:
        content = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
    return content if sniff(content) else None


def image_tools() -> list[Tool]:
    """``generateImage``."""
    return [
        Tool.from_model(
            "generateImage",
            "Generate images from a text prompt (saved as PNG files; put one in a document "
            "with ![alt](file:<fileId>)).",
            ImageArgs,
            generate_image,
            timeout_s=180,
        )
    ]
