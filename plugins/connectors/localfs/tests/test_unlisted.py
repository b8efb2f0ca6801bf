"""A folder the sync cannot read: its files stay indexed, the result says what was not
listed, and deletions elsewhere still reach the index (issue 27, fault 2)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from localfs_helpers import local_source, make_kernel, make_tree
from sqlalchemy import func, select

from nyla.testing.tables import FileContentIndex

#: what lets root read a folder of mode 000; the child process runs without them
ROOT_READS_ANYTHING = "-dac_override,-dac_read_search"


def _as_an_ordinary_reader() -> list[str]:
    """The command prefix that makes a folder of mode 000 unreadable to the child: root
    reads any folder (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH), so as root the child runs with
    those capabilities taken out of its bounding set; any other user is refused anyway."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: a mode-000 folder stays readable")
    return [setpriv, "--bounding-set", ROOT_READS_ANYTHING]


def _reachable_url(url: str, relay: Path) -> str:
    """``url`` with its socket reached through a hard link in ``relay``: the embedded
    server's socket sits in its data folder (mode 700, another user's), which a root without
    those capabilities cannot enter; a hard link to the socket in a folder of root's own is
    the same socket."""
    parts = urlsplit(url)
    host = parse_qs(parts.query).get("host", [""])[0]
    if not host.startswith("/"):
        return url  # a server over TCP needs no relay
    relay.mkdir()
    for name in os.listdir(host):
        if name.startswith(".s.PGSQL."):
            try:
                os.link(Path(host) / name, relay / name)
            except OSError as exc:
                pytest.skip(f"cannot link the database socket into {relay}: {exc}")
    query = "&".join(
        f"host={quote(str(relay), safe='/')}" if pair.startswith("host=") else pair
        for pair in parts.query.split("&")
    )
    return parts._replace(query=query).geturl()


async def _indexed(db) -> int:
    async with db.session() as s:
        query = select(func.count()).select_from(FileContentIndex)
        return int((await s.execute(query.where(FileContentIndex.status == "indexed"))).scalar())


async def test_an_unreadable_folder_keeps_its_files_and_is_reported(db, tmp_path: Path) -> None:
    kernel = make_kernel(db)
    root = tmp_path / "share"
    make_tree(root, 120, per_folder=40)
    ds = await local_source(kernel, root)
    _, first = await kernel.sync.run(ds, user_id="u1")
    assert first.items_indexed == 120 and await _indexed(db) == 120
    (root / "folder-000" / "note-00003.txt").unlink()  # a real deletion elsewhere
    locked = root / "folder-001"
    locked.chmod(0o000)
    child = Path(__file__).with_name("sync_once_child.py")
    try:
        done = subprocess.run(
            [
                *_as_an_ordinary_reader(),
                sys.executable,
                str(child),
                _reachable_url(db.url, tmp_path / "pg"),
                db.schema,
                ds,
            ],
            env=os.environ.copy(),
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        locked.chmod(0o755)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert await _indexed(db) == 119, (
        f"the files of the unreadable folder were deleted: {result['sweep']!r}"
    )
    assert result["itemsDeleted"] == 1, f"the deletion elsewhere was not swept: {result}"
    assert result["sweep"].startswith("incomplete: 1 folder could not be listed"), result["sweep"]
    assert [u["path"] for u in result["unlisted"]] == ["/folder-001"], result["unlisted"]
    assert "Permission denied" in result["unlisted"][0]["reason"], result["unlisted"]
    assert any("folder-001" in e for e in result["errors"]), result["errors"]
    _, readable = await kernel.sync.run(ds, user_id="u1")
    assert readable.sweep == "complete: nothing deleted" and not readable.unlisted, readable
    assert await _indexed(db) == 119
