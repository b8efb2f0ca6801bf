"""nyla.sdk.with_connection: a handler runs on the run user's own connection only, and every
connector error comes back as its code with what to do, its message without the server's
paths, the connection's server settings or the token; plus the write switch."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from nyla.connections.egress import EgressRefusedError
from nyla.connections.errors import ConnectorError
from nyla.sdk import (
    ConnectionArgs,
    ConnectionSession,
    RunContext,
    Tool,
    ToolContext,
    ToolResult,
    hookimpl,
    switched_off,
    with_connection,
    write_barrier,
)
from nyla.sdk.connectors import (
    BaseConnector,
    ConnectorSettings,
    CursorExpiredError,
    Item,
    ItemPage,
    ItemTooLargeError,
    NeedsReconsentError,
    NotSupportedError,
    UnsafePathError,
    VendorAuthError,
    VendorBadRequestError,
    VendorBadResponseError,
    VendorForbiddenError,
    VendorNotFoundError,
    VendorRateLimitError,
    VendorServerError,
    VendorTimeoutError,
    setting,
)
from nyla.testing import add_connection, tool_context

ROOT = "/srv/nyla/probe-share"  # a server setting of the connection: never shown
TOKEN = "tok-5f2a9c81e7"


class ProbeSettings(ConnectorSettings):
    """The probe's one setting: a folder on the server."""

    root: str | None = setting(None, kind="folder", label="Folder", server_only=True)


class Probe(BaseConnector):
    """A connector whose search answers from the fake vendor, or raises ``failure``."""

    service = "probe"
    label = "Probe Drive"
    base_url = "https://probe.example.com/api"
    settings = ProbeSettings

    def __init__(self) -> None:
        self.failure: ConnectorError | None = None

    async def search(
        self, ctx: Any, query: str, scope: str = "", cursor: str | None = None
    ) -> ItemPage:
        if self.failure is not None:
            raise self.failure
        answer = await ctx.http.get_json("/search", params={"q": query})
        return ItemPage(items=[Item(id=i, title=i) for i in answer["ids"]])


class ProbePlugin:
    def __init__(self, probe: Probe) -> None:
        self.probe = probe

    @hookimpl
    def nyla_connectors(self) -> list[Any]:
        return [self.probe]


class Vendor:
    """The fake vendor: ids for a search; for ``echo``, a 400 that repeats the credentials."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if request.url.params.get("q") == "echo":
            sent = request.headers.get("Authorization", "")
            return httpx.Response(400, json={"message": f"{sent} may not search {ROOT}/x"})
        return httpx.Response(200, json={"ids": ["doc-1", "doc-2"]})


class Args(ConnectionArgs):
    query: str = ""


@with_connection("probe", need="search", label="Probe")
async def probe_search(args: Args, ctx: ToolContext, session: ConnectionSession) -> ToolResult:
    """Search the probe."""
    page = await session.adapter.search(session, args.query)
    return ToolResult.ok(", ".join(i.id for i in page.items), data=session.connection.id)


@pytest.fixture
def probe() -> Probe:
    return Probe()


@pytest.fixture
def vendor() -> Vendor:
    return Vendor()


@pytest.fixture
def kernel(vendor_kernel: Any, vendor: Vendor, probe: Probe) -> Any:
    return vendor_kernel(vendor, ProbePlugin(probe))


def run_of(user: str, mandate: str | None = None, kernel: Any = None) -> ToolContext:
    if kernel is None:
        return ToolContext(run=RunContext(user_id=user, mandate_id=mandate))
    return tool_context(kernel, user=user, mandate=mandate)


async def connect(kernel: Any, user: str, **kw: Any) -> Any:
    return await add_connection(
        kernel, "probe", user, f"{user}@example.com", token=TOKEN, settings={"root": ROOT}, **kw
    )


async def test_the_handler_runs_on_the_users_only_connection(kernel, vendor):
    mine = await connect(kernel, "mia")
    result = await probe_search(Args(query="budget"), run_of("mia", kernel=kernel))
    assert result.success, result.error
    assert result.content == "doc-1, doc-2" and result.data == mine.id
    assert vendor.requests[0].headers["Authorization"] == f"Bearer {TOKEN}"
    assert probe_search.__name__ == "probe_search" and probe_search.__doc__ == "Search the probe."


async def test_a_connection_of_another_user_is_refused(kernel, vendor):
    theirs = await connect(kernel, "mallory")
    named = await probe_search(
        Args(query="x", connectionId=theirs.id), run_of("mia", kernel=kernel)
    )
    assert not named.success and named.error_details.field == "connectionId"
    assert named.error_details.code == "INVALID_VALUE"
    assert "mallory" not in f"{named.error} {named.error_details.suggestion}"
    unnamed = await probe_search(Args(query="x"), run_of("mia", kernel=kernel))
    assert unnamed.error_details.code == "NOT_AVAILABLE"
    assert not vendor.requests, "another user's connection reached the vendor"


async def test_a_connection_of_another_mandate_is_not_used(kernel, vendor):
    await add_connection(kernel, "probe", "mia", "mia@m1", token=TOKEN)  # no mandate: usable
    elsewhere = await kernel.connections.add("probe", user_id="mia", mandate_id="m1")
    in_m2 = await probe_search(Args(query="x"), run_of("mia", "m2", kernel))
    assert in_m2.success, "only the mandate-free connection counts in m2"
    named = await probe_search(
        Args(query="x", connectionId=elsewhere.id), run_of("mia", "m2", kernel)
    )
    assert named.error_details.code == "INVALID_VALUE"
    in_m1 = await probe_search(Args(query="x"), run_of("mia", "m1", kernel))
    assert in_m1.error_details.code == "MISSING_FIELD", "two connections count in m1"
    assert elsewhere.id in in_m1.error_details.suggestion


async def test_a_run_without_a_kernel_is_a_result():
    bare = await probe_search(Args(), ToolContext())
    assert not bare.success and bare.error_details.code == "NOT_AVAILABLE"


async def test_a_connector_without_the_capability_is_not_picked(kernel):
    await connect(kernel, "mia")

    @with_connection(None, need="send_draft", label="mail")
    async def send(args: Args, ctx: ToolContext, session: ConnectionSession) -> ToolResult:
        raise AssertionError("the probe cannot send drafts")

    result = await send(Args(), run_of("mia", kernel=kernel))
    assert result.error_details.code == "NOT_AVAILABLE"
    assert result.error == "the user has no mail connection"


#: every connector error class and the code the model sees for it
ERRORS: list[tuple[ConnectorError, str]] = [
    (ConnectorError("probe: broken"), "CONNECTOR_ERROR"),
    (NotSupportedError("probe: no such thing"), "NOT_SUPPORTED"),
    (VendorAuthError("probe: sign-in failed"), "AUTH_FAILED"),
    (NeedsReconsentError("probe: grant revoked"), "NEEDS_RECONSENT"),
    (VendorNotFoundError("probe: no such item"), "NOT_FOUND"),
    (VendorForbiddenError("probe: forbidden"), "FORBIDDEN"),
    (VendorBadRequestError("probe: bad request"), "BAD_REQUEST"),
    (UnsafePathError("probe: '..' is a dot segment"), "UNSAFE_PATH"),
    (VendorRateLimitError("probe: throttled", retry_after=7.2), "RATE_LIMITED"),
    (VendorServerError("probe: HTTP 503"), "VENDOR_UNAVAILABLE"),
    (VendorTimeoutError("probe: no answer within 30 s"), "TIMEOUT"),
    (CursorExpiredError("probe: delta token expired"), "CURSOR_EXPIRED"),
    (ItemTooLargeError("probe: 9 MB is more than 1 MB", size=9, limit=1), "TOO_LARGE"),
    (EgressRefusedError("probe: 10.0.0.7 is a private address"), "EGRESS_REFUSED"),
    (VendorBadResponseError("probe: the answer is not JSON"), "BAD_RESPONSE"),
]


def _all_subclasses(cls: type) -> set[type]:
    return {sub for direct in cls.__subclasses__() for sub in {direct, *_all_subclasses(direct)}}


def test_every_connector_error_class_is_mapped_here():
    # a new error class must get its row (and a suggestion): the test names it
    kernel_classes = {c for c in _all_subclasses(ConnectorError) if c.__module__.startswith("nyla")}
    missing = kernel_classes - {type(e) for e, _ in ERRORS}
    assert not missing, f"add a row to ERRORS for {sorted(c.__name__ for c in missing)}"


@pytest.mark.parametrize(("error", "code"), ERRORS, ids=[c for _, c in ERRORS])
async def test_each_connector_error_maps_to_its_code(kernel, probe, error, code):
    await connect(kernel, "mia")
    error.args = (f"{error} below {ROOT}/reports and /var/lib/nyla/cache/q3.pdf",)
    probe.failure = error
    result = await probe_search(Args(query="q3"), run_of("mia", kernel=kernel))
    assert not result.success and result.error_details.code == code
    assert result.error_details.suggestion
    if code != "CONNECTOR_ERROR":
        assert result.error_details.suggestion != "try another request", "a specific suggestion"
    assert ROOT not in result.error and "/var/lib/nyla" not in result.error, result.error
    assert str(error).split(" below ")[0] in result.error, "the error's own words stay"
    if code == "RATE_LIMITED":
        assert "try again in 8 s" in result.error_details.suggestion


async def test_the_paths_the_model_sent_stay_readable(kernel, probe):
    await connect(kernel, "mia")
    probe.failure = VendorNotFoundError(f"probe: /reports/2026/q3.txt not found below {ROOT}")
    result = await probe_search(Args(query="/reports/2026/q3.txt"), run_of("mia", kernel=kernel))
    assert "/reports/2026/q3.txt" in result.error and ROOT not in result.error


async def test_a_vendor_echoing_the_token_does_not_pass_it_on(kernel, vendor):
    await connect(kernel, "mia")
    result = await probe_search(Args(query="echo"), run_of("mia", kernel=kernel))
    assert vendor.requests, "the request reached the vendor"
    assert result.error_details.code == "BAD_REQUEST"
    assert TOKEN not in result.error and ROOT not in result.error, result.error
    assert "<credential> may not search" in result.error, "the echo is there, blanked"


def test_the_write_switch(monkeypatch):
    barrier = write_barrier("NYLA_PROBE_WRITE", ["writeProbe"], "changing Probe", "tell the user")

    async def write(ctx: ToolContext) -> str:
        return "written"

    tool = Tool.from_function(write, name="writeProbe")
    other = Tool.from_function(write, name="readProbe", read_only=True)
    assert barrier(tool, {}, ToolContext()) is None and not switched_off("NYLA_PROBE_WRITE")
    for off in ("off", "0", "False", " no "):
        monkeypatch.setenv("NYLA_PROBE_WRITE", off)
        denied = barrier(tool, {}, ToolContext())
        assert denied is not None and denied.error_details.code == "DENIED"
        assert denied.error == "changing Probe is switched off here (NYLA_PROBE_WRITE=off)"
        assert denied.error_details.suggestion == "tell the user"
        assert barrier(other, {}, ToolContext()) is None
    monkeypatch.setenv("NYLA_PROBE_WRITE", "on")
    assert barrier(tool, {}, ToolContext()) is None
