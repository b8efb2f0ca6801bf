"""An agent run with a scripted model: it searches the web (a priced search model; the
query neutralized before it leaves, the search's cost in the run's cost) and reads the hit's
page from the local test site, which the operator allowed."""

from __future__ import annotations

import json

from nyla.sdk import (
    AgentConfig,
    ChatResponse,
    ModelCapabilities,
    ModelSpec,
    OperationType,
    Role,
    RunContext,
    ToolCall,
    WebSearchHit,
)
from nyla.testing import plugin_kernel
from nyla.testing.scripted import ScriptedProvider

SEARCH_PRICE_CHF = 0.016


class SearchModel:
    """A search vendor's model as the AI service sees it (what Tavily's provider declares),
    answering from a fixed index and remembering the queries it was sent."""

    id = "search"
    timeout_s = 10.0

    def __init__(self, site: str) -> None:
        self.site = site
        self.queries: list[str] = []

    def models(self) -> list[ModelSpec]:
        return [
            ModelSpec(
                id="search:basic",
                provider="search",
                name="basic",
                operation_types=[OperationType.WEB_SEARCH],
                context_window=400,
                max_output_tokens=0,
                price_input_chf_per_mtok=0.0,
                price_output_chf_per_mtok=0.0,
                price_per_call_chf=SEARCH_PRICE_CHF,
                capabilities=ModelCapabilities(web_search=True),
            )
        ]

    async def chat(self, request):
        raise NotImplementedError("a search model does not chat")

    def stream(self, request):
        raise NotImplementedError("a search model does not chat")

    async def embed(self, model, texts):
        raise NotImplementedError("a search model does not embed")

    async def web_search(self, model: str, query: str, max_results: int = 5) -> list[WebSearchHit]:
        self.queries.append(query)
        return [
            WebSearchHit(url=f"{self.site}/article", title="Swiss VAT 2026", content="8.1 %"),
            WebSearchHit(url="https://example.org/other", title="Other", content="..."),
        ][:max_results]


def _script(request, index):
    results = [m for m in request.messages if m.role is Role.TOOL]
    if not results:
        args = {"query": "swiss vat rate for ada@example.com", "maxResults": 1}
        return ChatResponse(
            tool_calls=[ToolCall(id="s1", name="webSearch", arguments=json.dumps(args))]
        )
    if len(results) == 1:
        url = results[0].text.splitlines()[1].strip()
        return ChatResponse(
            tool_calls=[ToolCall(id="r1", name="readUrl", arguments=json.dumps({"url": url}))]
        )
    rate = next(line for line in results[1].text.splitlines() if "standard rate" in line)
    return f"Found: {rate}"


async def test_a_scripted_run_searches_the_web_and_reads_the_page(
    db, run_events, site, monkeypatch
):
    import nyla_toolbox_web

    monkeypatch.setenv("NYLA_WEB_ALLOW", "127.0.0.1")
    search = SearchModel(site)

    class SearchPlugin:
        from nyla.sdk import hookimpl

        @hookimpl
        def nyla_providers(self):
            return [search]

    provider = ScriptedProvider(_script, id="scripted", model="m")
    kernel = plugin_kernel(nyla_toolbox_web, provider, SearchPlugin(), db=db, builtins=True)
    context = RunContext(user_id="ada", workflow_id="wf-web", require_neutralization=True)
    config = AgentConfig(model="scripted:m", max_rounds=5, max_cost_chf=1.0)
    events = await run_events(kernel.agent.run("What is the Swiss VAT rate?", config, context))
    results = [e for e in events if e.type == "TOOL_RESULT"]
    assert [(e.data["toolName"], e.data["success"]) for e in results] == [
        ("webSearch", True),
        ("readUrl", True),
    ]
    final = next(e for e in events if e.type == "FINAL")
    assert final.text == "Found: The standard rate is **8.1 %** since 2024."
    # the address never left: the vendor saw a placeholder
    assert len(search.queries) == 1 and "ada@example.com" not in search.queries[0]
    summary = next(e for e in events if e.type == "AGENT_SUMMARY")
    assert summary.data["costChf"] >= SEARCH_PRICE_CHF
