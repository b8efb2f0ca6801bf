"""``webSearch`` and ``readUrl``. The fetching and extracting modules (httpx, lxml) load on
the first ``readUrl`` call, not when the plugin is discovered."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from nyla.sdk import (
    ModelNotAvailableError,
    ProviderError,
    Tool,
    ToolContext,
    ToolResult,
    download_name,
)
from nyla.sdk.documents import save_tool_file

if TYPE_CHECKING:
    from nyla_toolbox_web.fetch import PageFetcher


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)


class WebSearchArgs(_Args):
    """Arguments of ``webSearch``."""

    query: str = Field(min_length=1, max_length=400, description="What to search the web for.")
    max_results: int = Field(default=5, ge=1, le=20, description="Hits to return.")


class ReadUrlArgs(_Args):
    """Arguments of ``readUrl``."""

    url: str = Field(min_length=1, max_length=4000, description="An http(s) address.")
    save: bool = Field(
        default=False, description="Also save the text as a Markdown file in the user's files."
    )
    max_chars: int = Field(
        default=20_000, ge=500, le=200_000, description="Characters of text to return at most."
    )


async def web_search(args: WebSearchArgs, ctx: ToolContext) -> ToolResult:
    """Search through the AI service: the query neutralized, the search charged to the run."""
    try:
        hits = await ctx.services.ai.web_search(
            args.query,
            context=ctx.run,
            max_results=args.max_results,
            max_cost_chf=ctx.remaining_budget_chf,
            on_cost=ctx.charge,
        )
    except ModelNotAvailableError as exc:
        return ToolResult.fail(str(exc), "NO_SEARCH_MODEL", hint="a web search model is needed")
    except ProviderError as exc:
        return ToolResult.fail(str(exc), "SEARCH_FAILED")
    if not hits:
        return ToolResult.ok(f"No web results for {args.query!r}.", data={"hits": []})
    lines = [
        f"{n}. {hit.title or hit.url}\n   {hit.url}\n   {' '.join(hit.content.split())[:500]}"
        for n, hit in enumerate(hits, 1)
    ]
    return ToolResult.ok(
        "\n".join(lines), data={"hits": [hit.model_dump(by_alias=True) for hit in hits]}
    )


def read_url_tool(fetcher: PageFetcher | None) -> Tool:
    """``readUrl`` over ``fetcher`` (``None``: the one the settings describe, per call)."""

    async def read_url(args: ReadUrlArgs, ctx: ToolContext) -> ToolResult:
        from nyla.sdk.egress import EgressRefusedError
        from nyla_toolbox_web.extract import readable
        from nyla_toolbox_web.fetch import PageError, PageFetcher

        try:
            page = await (fetcher or PageFetcher.configured()).fetch(args.url)
        except EgressRefusedError as exc:
            return ToolResult.fail(str(exc), "ADDRESS_REFUSED", field="url")
        except PageError as exc:
            return ToolResult.fail(str(exc), exc.code, field="url")
        title, text = readable(page)
        shown = text[: args.max_chars]
        data: dict[str, object] = {
            "url": page.url,
            "finalUrl": page.final_url,
            "title": title,
            "contentType": page.content_type,
            "chars": len(text),
            "truncated": len(shown) < len(text),
        }
        head = f"# {title}\n\n" if title else ""
        content = f"{head}{shown}"
        if data["truncated"]:
            content += f"\n\n[cut at {args.max_chars} of {len(text)} characters]"
        if args.save:
            name = download_name(title or page.final_url, "page") + ".md"
            saved = await save_tool_file(
                ctx,
                name,
                f"<{page.final_url}>\n\n{head}{text}\n".encode(),
                "text/markdown",
                label=f"readUrl:{name}",
            )
            data["file"] = saved.to_wire()
            content = f"{saved.summary}\n\n{content}"
        return ToolResult.ok(content, data=data)

    return Tool.from_model(
        "readUrl",
        "Read one web page (http/https) as text; private and internal addresses are refused. "
        "save=true also stores the text as a file.",
        ReadUrlArgs,
        read_url,
        timeout_s=60,
    )


def web_tools(fetcher: PageFetcher | None = None) -> list[Tool]:
    """``webSearch`` and ``readUrl``."""
    return [
        Tool.from_model(
            "webSearch",
            "Search the web; answers title, address and an excerpt of each hit.",
            WebSearchArgs,
            web_search,
            read_only=True,
            timeout_s=90,
        ),
        read_url_tool(fetcher),
    ]
