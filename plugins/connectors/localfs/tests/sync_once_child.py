"""Child process of the unreadable-folder test: one sync, its result as JSON on stdout.

The test runs it without the capabilities that let root read any folder (``setpriv``), so a
folder with mode 000 fails to list with a real ``EACCES``, as it does for any other user."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


async def main(url: str, schema: str, ds_id: str) -> None:
    from localfs_helpers import make_kernel

    from nyla.testing import open_database

    kernel = make_kernel(open_database(url, schema))
    try:
        _, result = await kernel.sync.run(ds_id, user_id=None)
    finally:
        await kernel.aclose()
    print(json.dumps(result.model_dump(mode="json", by_alias=True)))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
