"""ClickUp specifics over the fake account: the hierarchy with folders and folderless lists
under the workspace and list limits, ``page``/``last_page`` paging, the ``date_updated_gt``
cursor with its overlap, task search on the workspace endpoint, read with comments and
attachments, writes, and ClickUp's per-token rate limit (paced below it; a 429 waited out
until ``X-RateLimit-Reset``)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta
from typing import Any

import httpx
import pytest
import pytest_asyncio

import nyla_connector_clickup
from nyla.sdk.connectors import (
    Limiter,
    TaskChange,
    TaskQuery,
    TokenGrant,
    VendorBadRequestError,
    sync_pages,
)
from nyla.testing import connection_service

from .fake_clickup import FakeClickUp, make_task

TOKEN = "pk_183_FAKETOKEN"
ZURICH_MIDNIGHT = datetime(2026, 1, 4, 23, 0, tzinfo=UTC)  # 2026-01-05 00:00 in Zurich


def ms(moment: datetime) -> str:
    return str(int(moment.timestamp() * 1000))


class Clock:
    """A clock the fake's rate limit and the kernel's budget share; sleeping advances it."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def account() -> FakeClickUp:
    """Two workspaces: 9001 with space 790 (folder 457: lists 124, 125; folderless 901) and
    space 791 (folderless 902); 9002 with space 800 (folderless 903). Two tasks a list."""
    fake = FakeClickUp()
    second = {**fake.teams[0], "id": "9002", "name": "Side Workspace"}
    fake.teams.append(second)
    fake.add_space("9001", "790", "Engineering")
    fake.add_space("9001", "791", "Marketing")
    fake.add_space("9002", "800", "Side")
    fake.add_folder("790", "457", "Releases")
    refs = [
        fake.add_list("790", "457", "124", "Sprint 12"),
        fake.add_list("790", "457", "125", "Sprint 13"),
        fake.add_list("790", "-", "901", "Inbox"),
        fake.add_list("791", "-", "902", "Campaigns"),
        fake.add_list("800", "-", "903", "Side list"),
    ]
    for n, ref in enumerate(refs):
        for k in range(2):
            updated = datetime(2026, 1, 5, 8, tzinfo=UTC) + timedelta(hours=2 * n + k)
            fake.tasks.append(
                make_task(
                    f"86a{ref['list']}{k}",
                    f"Task {k} of {ref['list_name']}",
                    ref,
                    date_updated=ms(updated),
                )
            )
    return fake


@pytest.fixture
def fake() -> FakeClickUp:
    return account()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest_asyncio.fixture
async def session(db: Any, fake: FakeClickUp, clock: Clock) -> AsyncIterator[Any]:
    service = connection_service(
        nyla_connector_clickup,
        db=db,
        vendor=fake,
        sleep=clock.sleep,
        limiter=Limiter(clock=clock, sleep=clock.sleep),
        names=["clickup"],
    )
    conn = await service.add(
        "clickup",
        user_id="mia",
        account="mia@example.com",
        grant=TokenGrant(access_token=TOKEN),
        connection_id=f"cu-{uuid.uuid4().hex[:8]}",
    )
    async with service.open(conn.id, user_id="mia") as opened:
        yield opened


async def synced(session: Any, scope: str, checkpoint: dict | None = None) -> tuple[list, dict]:
    pages = [p async for p in sync_pages(session.adapter, session, scope, checkpoint)]
    return [i for p in pages for i in p.items], pages[-1].checkpoint


def paths(fake: FakeClickUp, name: str) -> list[str]:
    return [r.url.path.split("/api/v2")[-1] for r in fake.requests if name in r.url.path]


# ---- hierarchy and limits -----------------------------------------------------------------


async def test_browse_walks_workspaces_spaces_folders_and_folderless_lists(session):
    a = session.adapter
    assert [i.path for i in (await a.browse(session, "")).items] == ["/9001", "/9002"]
    assert [i.path for i in (await a.browse(session, "/9001")).items] == ["/9001/790", "/9001/791"]
    space = [(i.id, i.path) for i in (await a.browse(session, "/9001/790")).items]
    assert space == [("folder:457", "/9001/790/457"), ("list:901", "/9001/790/-/901")]
    lists = [i.path for i in (await a.browse(session, "/9001/790/457")).items]
    assert lists == ["/9001/790/457/124", "/9001/790/457/125"]
    tasks = (await a.browse(session, "/9001/790/-/901")).items
    assert {t.id for t in tasks} == {"86a9010", "86a9011"}
    assert all(t.path.startswith("/9001/790/-/901/") for t in tasks)


async def test_sync_takes_every_list_of_every_workspace_by_default(session, fake):
    items, _ = await synced(session, "")
    assert {i.id for i in items} == {t["id"] for t in fake.tasks}
    team_calls = paths(fake, "/task")
    assert {p for p in team_calls} == {"/team/9001/task", "/team/9002/task"}, team_calls
    first = next(r for r in fake.requests if r.url.path.endswith("/team/9001/task"))
    assert first.url.params.get_list("list_ids[]") == ["901", "124", "125", "902"]


async def test_sync_keeps_max_workspaces_and_max_lists_per_workspace(session, fake):
    session.limits = {"max_workspaces": 1, "max_lists_per_workspace": 2, "max_tasks": 2000}
    items, _ = await synced(session, "")
    lists = {i.extra["vendor"]["listId"] for i in items}
    assert lists == {"901", "124"}, "the first workspace's first two lists (folderless first)"
    assert not paths(fake, "/team/9002"), "a workspace past max_workspaces was read"


async def test_sync_of_one_space_and_a_folderless_list_scope(session):
    items, _ = await synced(session, "/9001/791")
    assert {i.id for i in items} == {"86a9020", "86a9021"}
    items, _ = await synced(session, "/9001/790/-/901")
    assert {i.id for i in items} == {"86a9010", "86a9011"}
    with pytest.raises(VendorBadRequestError):
        await synced(session, "/9001/../etc")


# ---- paging and the cursor ------------------------------------------------------------------


async def test_pages_follow_last_page_to_the_end(session, fake):
    fake.page_size = 3
    items, _ = await synced(session, "/9001")
    sent = [r.url.params for r in fake.requests if r.url.path.endswith("/team/9001/task")]
    # keyset paging: always page 0, after the creation time of the last task read (that
    # millisecond included, its task dropped by id: 3 new, then 2 new a page)
    assert [p["page"] for p in sent] == ["0", "0", "0", "0"], "8 tasks at 3 a page"
    assert "date_created_gt" not in sent[0]
    after = [int(p["date_created_gt"]) for p in sent[1:]]
    assert after == sorted(after) and len(set(after)) == 3
    assert all(p["order_by"] == "created" and p["reverse"] == "true" for p in sent)
    assert len(items) == len({i.id for i in items}) == 8


async def test_cursor_is_date_updated_with_an_overlap(session, fake):
    _, checkpoint = await synced(session, "/9001/790/-/901")
    newest = max(int(t["date_updated"]) for t in fake.tasks if t["list"]["id"] == "901")
    assert datetime.fromisoformat(checkpoint["since"]) == datetime.fromtimestamp(newest / 1000, UTC)
    changed = next(t for t in fake.tasks if t["id"] == "86a9010")
    changed["date_updated"] = str(newest + 3_600_000)
    changed["name"] = "Renamed"
    fake.requests.clear()
    items, again = await synced(session, "/9001/790/-/901", checkpoint)
    query = next(r for r in fake.requests if r.url.path.endswith("/task")).url.params
    assert int(query["date_updated_gt"]) == newest - 5 * 60 * 1000
    assert query["order_by"] == "created" and query["include_closed"] == "true"
    # the change, and the task updated within the overlap before the cursor (unchanged: the
    # walker skips it by its hash); the older unchanged task is not read again
    assert sorted(i.title for i in items) == ["Renamed", "Task 1 of Inbox"]
    assert datetime.fromisoformat(again["since"]) > datetime.fromisoformat(checkpoint["since"])


async def test_list_ids_for_deletions(session, fake):
    fake.tasks = [t for t in fake.tasks if t["id"] != "86a1240"]
    ids = [i async for page in session.adapter.list_ids(session, "/9001/790") for i in page]
    assert sorted(ids) == ["86a1241", "86a1250", "86a1251", "86a9010", "86a9011"]


# ---- task search ----------------------------------------------------------------------------


def week_tasks(fake: FakeClickUp) -> None:
    ref = {"team": "9001", "space": "790", "folder": "-", "list": "901", "list_name": "Inbox"}
    leo = fake.teams[0]["members"][1]["user"]
    rows = [  # id, name, due (UTC), closed, assignee is Mia
        ("86w1", "Fix checkout", ZURICH_MIDNIGHT + timedelta(minutes=30), False, True),
        ("86w2", "Ship notes", ZURICH_MIDNIGHT + timedelta(days=2), True, True),
        ("86w3", "Budget review", ZURICH_MIDNIGHT + timedelta(days=7, minutes=30), False, True),
        ("86w4", "Update logo", ZURICH_MIDNIGHT + timedelta(days=3), False, False),
        ("86w5", "Plan offsite", ZURICH_MIDNIGHT - timedelta(minutes=30), False, True),
    ]
    fake.tasks = []
    for task_id, name, due, closed, mine in rows:
        task = make_task(task_id, name, ref, due_date=ms(due))
        if closed:
            task["status"] = {
                "status": "complete",
                "color": "#6bc950",
                "orderindex": 2,
                "type": "closed",
            }
        if not mine:
            task["assignees"] = [leo]
        fake.tasks.append(task)


async def test_task_search_mine_open_due_this_week_in_the_users_zone(session, fake):
    week_tasks(fake)
    query = TaskQuery(
        mine=True, open_only=True, due_from=date(2026, 1, 5), due_to=date(2026, 1, 11)
    )
    page = await session.adapter.search_tasks(session, query)
    assert [(i.id, i.extra["due"]) for i in page.items] == [("86w1", "2026-01-05")]
    sent = next(r for r in fake.requests if r.url.path.endswith("/team/9001/task")).url.params
    assert sent.get_list("assignees[]") == ["183"] and sent["include_closed"] == "false"
    assert int(sent["due_date_gt"]) == int(ZURICH_MIDNIGHT.timestamp() * 1000) - 1
    line = page.items[0]
    assert line.extra["status"] == "to do" and line.extra["assignee"] == "Mia Krystof"


async def test_search_matches_words_scoped_to_the_team(session, fake):
    page = await session.adapter.search(session, "task 0", "/9001/790/457")
    assert {i.id for i in page.items} == {"86a1240", "86a1250"}, "Inbox's task 0 is out of scope"
    sent = next(r for r in fake.requests if r.url.path.endswith("/team/9001/task")).url.params
    assert sent.get_list("project_ids[]") == ["457"]
    assert not paths(fake, "/team/9002"), "a search scoped to one workspace read another"


# ---- read, attachments, writes --------------------------------------------------------------


async def test_read_with_comments_paged_back_and_attachments(session, fake):
    task = next(t for t in fake.tasks if t["id"] == "86a9010")
    fake.attach(task, "scan.pdf", b"%PDF-1.7\x00\xff", "application/pdf")
    base = fake.comments.setdefault("86a9010", [])
    for n in range(30):
        row = {
            **__import__("copy").deepcopy(fake_comment()),
            "id": f"c{n}",
            "comment_text": f"note {n}",
            "date": str(1767690000000 + n * 1000),
        }
        base.append(row)
    detail = await session.adapter.read_task(session, "86a9010")
    assert [c.text for c in detail.comments] == [f"note {n}" for n in range(30)]
    back = [r for r in fake.requests if r.url.path.endswith("/comment")]
    assert len(back) == 2 and back[1].url.params["start_id"] == "c5"
    [att] = detail.attachments
    assert att.title == "scan.pdf" and att.mime == "application/pdf"
    got = await session.adapter.download(session, att.id)
    assert got.content == b"%PDF-1.7\x00\xff"
    raw = await session.adapter.download(session, "86a9010")
    assert raw.mime == "application/json" and b'"86a9010"' in raw.content


def fake_comment() -> dict:
    from .fake_clickup import sample

    return sample("comments")["comments"][0]


async def test_writes_create_update_comment(session, fake):
    made = await session.adapter.create_task(
        session,
        "/9001/790/-/901",
        TaskChange(
            title="Plan Q2",
            due=date(2026, 4, 1),
            assignee="me",
            priority="high",
            comment="Kick-off next week",
        ),
    )
    assert made.extra["due"] == "2026-04-01" and made.extra["priority"] == "high"
    assert made.extra["assignee"] == "Mia Krystof"
    kinds = [w[0] for w in fake.writes]
    assert kinds == ["create", "comment"]
    body = fake.writes[0][2]
    assert body["assignees"] == [183] and body["priority"] == 2
    done = await session.adapter.update_task(
        session, made.id, TaskChange(status="Complete", assignee="leo@example.com")
    )
    assert done.extra["status"] == "complete" and "Leo Brand" in done.extra["assignee"]
    assert fake.writes[-1][2]["assignees"] == {"add": [184], "rem": []}
    with pytest.raises(VendorBadRequestError):
        await session.adapter.update_task(session, made.id, TaskChange(status="Archived"))
    with pytest.raises(VendorBadRequestError):
        await session.adapter.create_task(session, "not a list", TaskChange(title="x"))


# ---- the rate limit -------------------------------------------------------------------------


async def test_a_long_sync_stays_under_100_requests_a_minute(session, fake, clock):
    fake.clock = clock
    fake.page_size = 1
    ref = {"team": "9001", "space": "790", "folder": "-", "list": "901", "list_name": "Inbox"}
    fake.tasks += [make_task(f"86b{n:04d}", f"Bulk {n}", ref) for n in range(150)]
    items, _ = await synced(session, "/9001/790/-/901")
    assert len(fake.requests) > 150 and len({i.id for i in items}) == 152
    assert fake.throttled == 0, "the budget let ClickUp answer 429"
    assert clock.now - 1000.0 >= 60, "more than 100 requests must take more than a minute"


async def test_429_is_waited_out_until_x_ratelimit_reset(session, fake, clock):
    fake.clock = clock
    fake.sent[TOKEN] = [clock.now] * 100  # another app used this token's minute
    assert "Mia Krystof" in await session.adapter.check(session)
    assert fake.throttled == 1
    assert any(59 <= d <= 63 for d in clock.slept), f"waited {clock.slept}"
    assert session.http.stats.throttled == 1


async def test_the_data_sources_rag_limits_reach_the_walk(db, fake, make_kernel):
    from cryptography.fernet import Fernet

    from nyla.testing.scripted import ScriptedPlugin, ScriptedProvider

    provider = ScriptedProvider(
        lambda request, index: "ok", embed_fn=lambda t: [[1.0] * 8] * len(t)
    )
    kernel = make_kernel(
        nyla_connector_clickup,
        ScriptedPlugin(provider),
        db=db,
        builtins=False,
        settings={"secret_key": Fernet.generate_key(), "transport": httpx.MockTransport(fake)},
    )
    conn = await kernel.connections.add(
        "clickup", user_id="mia", grant=TokenGrant(access_token=TOKEN)
    )
    await kernel.knowledge.governance.add_data_source(
        f"ds-{conn.id}",
        conn.id,
        "/9001",
        user_id="mia",
        rag_index_enabled=True,
        settings={"ragLimits": {"maxListsPerWorkspace": 1}},
    )
    _, result = await kernel.sync.run(f"ds-{conn.id}", user_id="mia")
    assert not result.errors, result
    assert result.items_indexed == 2, "only the first list of the workspace (901: 2 tasks)"
    sent = next(r for r in fake.requests if r.url.path.endswith("/team/9001/task")).url.params
    assert sent.get_list("list_ids[]") == ["901"]


# ---- a listing that changes under the walker --------------------------------------------


def big_list(fake: FakeClickUp, count: int) -> None:
    """``count`` tasks in list 901, created and last updated one minute apart."""
    ref = {"team": "9001", "space": "790", "folder": "-", "list": "901", "list_name": "Inbox"}
    fake.tasks = [t for t in fake.tasks if t["list"]["id"] != "901"]
    start = datetime(2026, 3, 1, tzinfo=UTC)
    for i in range(count):
        at = ms(start + timedelta(minutes=i))
        fake.tasks.append(
            make_task(f"t{i:04d}", f"Task {i}", ref, date_created=at, date_updated=at)
        )


def edit_during_listing(fake: FakeClickUp, edits: dict[int, str]) -> None:
    """After the task page request number N, edit (``touch``) or delete (``drop``) the
    oldest task already read: what a colleague does while the walker reads."""
    route, seen = fake.route, {"n": 0}

    def routed(request: httpx.Request) -> httpx.Response:
        answer = route(request)
        if request.url.path.endswith("/team/9001/task"):
            seen["n"] += 1
            action = edits.get(seen["n"])
            inbox = [t for t in fake.tasks if t["list"]["id"] == "901"]
            first = min(inbox, key=lambda t: int(t["date_created"]))
            if action == "touch":
                first["date_updated"] = ms(datetime(2026, 6, 1, tzinfo=UTC))
                first["name"] = "Edited while listing"
            elif action == "drop":
                fake.tasks.remove(first)
        return answer

    fake.route = routed  # type: ignore[method-assign]


@pytest.mark.parametrize("edits", [{1: "touch"}, {1: "touch", 2: "touch"}, {1: "drop"}])
async def test_an_edit_or_a_deletion_during_the_listing_hides_no_task(session, fake, edits):
    fake.page_size = 100
    big_list(fake, 250)
    edit_during_listing(fake, edits)
    items, _ = await synced(session, "/9001/790/-/901")
    expected = {t["id"] for t in fake.tasks if t["list"]["id"] == "901"}
    got = {i.id for i in items}
    assert expected <= got, f"{len(expected - got)} of {len(expected)} tasks were never read"
    ids = [i async for chunk in session.adapter.list_ids(session, "/9001/790/-/901") for i in chunk]
    assert set(ids) == expected and len(ids) == len(expected)


async def test_tasks_created_in_one_millisecond_across_a_page_are_all_read(session, fake):
    fake.page_size = 4
    big_list(fake, 11)
    for task in fake.tasks[2:9]:  # seven tasks share one creation time, spanning two pages
        task["date_created"] = fake.tasks[2]["date_created"]
    items, _ = await synced(session, "/9001/790/-/901")
    assert sorted(i.id for i in items) == sorted(f"t{i:04d}" for i in range(11))
