"""``/mcp`` fuzzed, the one route the OpenAPI schema leaves out (test_schema_fuzz.py cannot
reach it): JSON-RPC messages of every method the server knows with parameters of any shape,
batches, bodies that are not JSON-RPC or not JSON at all, odd ``Content-Type``, ``Accept``
and ``mcp-protocol-version`` headers, as a user. Not one may be answered with a 5xx or leave
the transport hanging; an error is JSON-RPC's (or the host's JSON ``detail``).

Cases are drawn first (Hypothesis, derandomized: the same on every run) and sent in-process
on the test's event loop, where the app's database connections live."""

from __future__ import annotations

import json
import os
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import strategies as st

from .test_schema_fuzz import draw

EXAMPLES = int(os.environ.get("NYLA_FUZZ_EXAMPLES", "20")) * 6
METHODS = [
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "prompts/list",
    "completion/complete",
    "logging/setLevel",
    "notifications/initialized",
    "notifications/cancelled",
    "no/such/method",
]
TOOLS = ["searchKnowledge", "listDataSources", "searchDataSource", "noSuchTool"]

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)
arguments = st.dictionaries(
    st.sampled_from(["query", "k", "dataSourceId", "cursor", "x"]), values, max_size=4
)
tool_params = st.fixed_dictionaries(
    {"name": st.sampled_from(TOOLS) | st.text(max_size=20)},
    optional={"arguments": arguments | values},
)
message = st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0", "2.0", "1.0"]), "method": st.sampled_from(METHODS)},
    optional={
        "id": st.integers() | st.text(max_size=10) | st.none() | values,
        "params": tool_params | values,
    },
)
#: well-formed calls with arguments of any shape: these reach the tools
call = st.fixed_dictionaries(
    {
        "jsonrpc": st.just("2.0"),
        "id": st.integers(0, 2**31),
        "method": st.just("tools/call"),
        "params": st.fixed_dictionaries({"name": st.sampled_from(TOOLS), "arguments": arguments}),
    }
)
hello = st.fixed_dictionaries(
    {
        "jsonrpc": st.just("2.0"),
        "id": st.integers(0, 9),
        "method": st.sampled_from(["initialize", "tools/list", "ping"]),
        "params": st.fixed_dictionaries(
            {
                "protocolVersion": st.sampled_from(["2025-06-18", "2025-11-25"])
                | st.text(max_size=12),
                "capabilities": st.just({}) | values,
                "clientInfo": st.just({"name": "fuzz", "version": "1"}) | values,
            }
        ),
    }
)
body = (
    call.map(json.dumps)
    | call.map(json.dumps)
    | hello.map(json.dumps)
    | message.map(json.dumps)
    | st.lists(message, max_size=3).map(json.dumps)
    | values.map(json.dumps)
    | st.binary(max_size=200).map(lambda b: b.decode("latin-1"))
)
headers = st.fixed_dictionaries(
    {},
    optional={
        "Content-Type": st.sampled_from(
            ["application/json", "text/plain", "application/json; charset=latin-1", ""]
        ),
        "Accept": st.sampled_from(
            ["application/json, text/event-stream", "application/json", "text/html", "*/*"]
        ),
        "mcp-protocol-version": st.sampled_from(
            ["2025-06-18", "2025-11-25", "1999-01-01", "x" * 300, ""]
        ),
    },
)


def fault(response: Any) -> str:
    """What is wrong with an answer ('' when nothing): a 5xx; a JSON-RPC "Internal error"
    (-32603: an exception the server did not handle, answered in a 200); a JSON error
    without JSON-RPC's ``error`` or the host's ``detail``. (The transport refuses a wrong
    header in plain text: a clear line, kept.)"""
    if response.status_code >= 500:
        return "5xx"
    kind = response.headers.get("content-type", "")
    if not response.content or not kind.startswith("application/json"):
        return ""
    answers = response.json()
    for answer in answers if isinstance(answers, list) else [answers]:
        if not isinstance(answer, dict):
            return f"{response.status_code} not an object"
        error = answer.get("error")
        if isinstance(error, dict) and error.get("code") == -32603:
            return "internal error"
        if response.status_code >= 400 and not (error or answer.get("detail")):
            return f"{response.status_code} no error"
    return ""


@pytest.mark.db
async def test_no_message_to_mcp_gets_a_5xx_or_hangs(client, token_for):
    alice = await token_for("alice")
    statuses: dict[int, int] = {}
    faults: dict[str, str] = {}
    for content, extra in draw(st.tuples(body, headers), EXAMPLES):
        request_headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            **extra,
            **alice,
        }
        request_headers.pop("Authorization")
        with anyio.fail_after(30):  # a transport left waiting would hang here
            response = await client.post(
                "/mcp", content=content.encode(), headers={**request_headers, **alice}
            )
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        wrong = fault(response)
        if wrong and wrong not in faults:  # the first case of each kind
            faults[wrong] = f"{request_headers} {content[:200]!r} -> {response.text[:200]!r}"
    print(
        f"\nmcp fuzz: {sum(statuses.values())} requests; statuses {dict(sorted(statuses.items()))}"
    )
    assert not faults, "\n".join(f"{k}: {v}" for k, v in faults.items())
    assert 200 in statuses and any(400 <= s < 500 for s in statuses)


def test_the_check_sees_what_it_looks_for():
    def answer(status: int, body: Any) -> httpx.Response:
        return httpx.Response(status, json=body)

    assert fault(httpx.Response(500, text="boom")) == "5xx"
    internal = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "x"}}
    assert fault(answer(200, internal)) == "internal error"
    assert fault(answer(200, [internal])) == "internal error"
    assert fault(answer(400, {"jsonrpc": "2.0", "id": None})) == "400 no error"
    parse_error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "x"}}
    assert fault(answer(400, parse_error)) == ""
    assert fault(httpx.Response(400, text="Invalid Content-Type header")) == ""
