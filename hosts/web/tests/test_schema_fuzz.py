"""Every route of the host, fuzzed from its own OpenAPI schema (schemathesis): requests that
fit the schema and requests that break it, with random ids and with ids of real objects, as a
user, as a sysadmin and without a credential, with hostile ``X-User-Timezone`` and
``Last-Event-ID`` headers — and not one of them may be answered with a 5xx (issue 27, fault
7: a new route cannot ship a 500).

The cases are drawn first (Hypothesis, derandomized: the same cases on every run) and then
sent in-process over httpx's ASGI transport on the test's event loop, where the app's
database connections live. ``NYLA_FUZZ_EXAMPLES`` raises the cases per operation and mode
for a longer local run."""

from __future__ import annotations

import collections
import os
import time
from typing import Any

import httpx
import pytest
import requests
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from .conftest import wait_run

schemathesis = pytest.importorskip("schemathesis")

pytestmark = [pytest.mark.db, pytest.mark.long]

#: cases per operation for each of: valid with random ids, valid with real ids, invalid
EXAMPLES = int(os.environ.get("NYLA_FUZZ_EXAMPLES", "20"))
#: timezone headers the campaign broke the host with, sent in turn beside generated ones
HOSTILE_ZONES = ["America", "Etc", "zone.tab", "../../etc/passwd", "/etc/localtime", "Europe/"]
HOSTILE_EVENT_IDS = ["²", "5" * 5000, str(2**63), "-1", "٣", ""]
STRING_OR_NULL = {"anyOf": [{"type": "string"}, {"type": "null"}]}


def with_hostile_headers(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with ``X-User-Timezone`` declared on every operation, so it is generated
    for every route (the host reads it on every request)."""
    header = {"name": "X-User-Timezone", "in": "header", "schema": {"type": "string"}}
    for path in schema["paths"].values():
        for operation in path.values():
            operation.setdefault("parameters", []).append(dict(header))
    return schema


def draw(strategy: st.SearchStrategy[Any], count: int) -> list[Any]:
    """``count`` examples of ``strategy`` (fewer when it has fewer), the same on every run."""
    drawn: list[Any] = []

    @settings(
        max_examples=count,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(case: Any) -> None:
        drawn.append(case)

    collect()
    return drawn[:count]


def as_httpx(case: Any) -> dict[str, Any]:
    """A generated case as keyword arguments of ``httpx.AsyncClient.request`` (requests
    prepares it: query encoding, JSON, multipart bodies)."""
    prepared = requests.Request(**case.as_transport_kwargs(base_url="http://host.test")).prepare()
    body = prepared.body.encode() if isinstance(prepared.body, str) else prepared.body
    headers = {k: v for k, v in prepared.headers.items() if k.lower() != "content-length"}
    return {"method": prepared.method, "url": prepared.url, "headers": headers, "content": body}


async def seed(state, client, alice: dict[str, str]) -> dict[str, str]:
    """Real objects of the user's, by the name of the path parameter that addresses them."""
    connection = await client.post(
        "/api/connections", json={"service": "memfs", "label": "fuzz"}, headers=alice
    )
    source = await client.post(
        "/api/datasources",
        json={"connectionId": connection.json()["id"], "path": "/docs"},
        headers=alice,
    )
    upload = await client.post(
        "/api/files", files={"file": ("a.txt", b"alpha", "text/plain")}, headers=alice
    )
    run = await client.post("/api/runs", json={"prompt": "hello"}, headers=alice)
    await wait_run(state, run.json()["runId"])
    return {
        "connection_id": connection.json()["id"],
        "data_source_id": source.json()["id"],
        "file_id": upload.json()["id"],
        "run_id": run.json()["runId"],
        "service": "memfs",
    }


def check(case: Any, response: httpx.Response) -> None:
    """No 5xx; errors are JSON with a ``detail`` (under ``/v1/`` OpenAI's ``error.message``,
    under ``/oauth/`` RFC 6749's ``error``);
    a redirect goes to the page; a stream of events ends with ``end`` (``[DONE]`` under
    ``/v1/``); anything else but a download is JSON."""
    where = f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text[:300]}"
    assert response.status_code < 500, where
    kind = response.headers.get("content-type", "")
    openai = case.formatted_path.startswith("/v1/")  # OpenAI's shapes, for its clients
    oauth = case.formatted_path.startswith("/oauth/")  # RFC 6749's shapes, for OAuth clients
    if response.status_code >= 400:
        assert kind.startswith("application/json"), where
        body = response.json()
        if oauth:
            assert isinstance(body["error"], str) and body["error"], where
        else:
            assert body["error"]["message"] if openai else body["detail"], where
    elif 300 <= response.status_code < 400:  # the sign-in callback sends the browser home
        # (the authorization endpoint sends it to a registered client, or to the consent page)
        assert oauth or response.headers["location"].startswith(("/#sources?", "/#mcp?")), where
    elif kind.startswith("text/event-stream"):
        assert ("data: [DONE]" if openai else "event: end\n") in response.text, where
    elif not response.headers.get("content-disposition", "").startswith("attachment"):
        assert kind.startswith("application/json"), where
        response.json()


def cases_of(operation: Any, real_ids: dict[str, str]) -> list[Any]:
    """The operation's cases: valid ones with random ids and with real ones, invalid ones."""
    from schemathesis import GenerationMode

    positive = operation.as_strategy(GenerationMode.POSITIVE)
    names = {p.name for p in operation.path_parameters}
    ids = {name: real_ids[name] for name in names if name in real_ids}
    drawn = draw(positive, EXAMPLES)
    if ids:
        drawn += draw(operation.as_strategy(GenerationMode.POSITIVE, path_parameters=ids), EXAMPLES)
    if breakable(operation):
        drawn += draw(operation.as_strategy(GenerationMode.NEGATIVE), EXAMPLES)
    return drawn


def breakable(operation: Any) -> bool:
    """Whether invalid requests exist for the operation: it takes a body, a query parameter
    or a constrained one (every string is a valid path segment or header, and Hypothesis
    would search seconds before giving up on breaking one)."""
    if list(operation.body):
        return True
    for parameter in operation.iter_parameters():
        schema = {k: v for k, v in parameter.definition.get("schema", {}).items() if k != "title"}
        if parameter.location == "query" or schema not in ({"type": "string"}, STRING_OR_NULL):
            return True
    return False


def credentials(index: int, alice: dict, admin: dict) -> dict[str, str]:
    """A user's token mostly, a sysadmin's and none in turn."""
    return [alice, alice, alice, admin, {}][index % 5]


def hostile(index: int, headers: dict[str, Any], path: str) -> dict[str, Any]:
    """Every third case carries a timezone the campaign used; the event stream gets its
    Last-Event-IDs too (as UTF-8 bytes, the way a client sends them)."""
    headers = dict(headers)
    if index % 3 == 0:
        headers["X-User-Timezone"] = HOSTILE_ZONES[index // 3 % len(HOSTILE_ZONES)].encode()
    if path.endswith("/events") and index % 2 == 0:
        value = HOSTILE_EVENT_IDS[index // 2 % len(HOSTILE_EVENT_IDS)]
        headers["Last-Event-ID"] = value.encode()
    return headers


async def test_no_generated_request_gets_a_5xx(state, client, token_for):
    alice = await token_for("alice")
    admin = await token_for("root-user", role="sysadmin", mandate=None)
    real_ids = await seed(state, client, alice)
    raw = (await client.get("/api/openapi.json", headers=alice)).json()
    schema = schemathesis.openapi.from_dict(with_hostile_headers(raw))
    operations = sorted(
        (result.ok() for result in schema.get_all_operations()),
        # deletions last, so the other operations still find the real objects
        key=lambda op: (op.method.upper() == "DELETE", op.path, op.method),
    )
    statuses: collections.Counter[int] = collections.Counter()
    covered: set[str] = set()
    unsendable = 0
    started = time.monotonic()
    for operation in operations:
        for index, case in enumerate(cases_of(operation, real_ids)):
            request = as_httpx(case)
            request["headers"].pop("Authorization", None)
            auth = credentials(index, alice, admin)
            request["headers"] = hostile(index, {**request["headers"], **auth}, case.path)
            try:
                response = await client.request(**request)
            except httpx.InvalidURL:  # over 64 KiB: no client sends it, no server reads it
                unsendable += 1
                continue
            check(case, response)
            statuses[response.status_code] += 1
        covered.add(f"{operation.method.upper()} {operation.path}")
    elapsed = time.monotonic() - started
    total = sum(statuses.values())
    print(
        f"\nschema fuzz: {total} requests over {len(covered)} operations in {elapsed:.1f} s; "
        f"statuses {dict(sorted(statuses.items()))}; {unsendable} too long to send"
    )
    assert len(covered) == len(operations) >= 25
    assert total >= EXAMPLES * len(covered) - unsendable
    assert any(200 <= s < 300 for s in statuses) and 422 in statuses
