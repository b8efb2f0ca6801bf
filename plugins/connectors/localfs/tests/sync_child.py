"""Child process of the recovery test: runs one sync (slowly) until it is killed."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


async def main(url: str, schema: str, ds_id: str) -> None:
    from localfs_helpers import make_kernel

    from nyla.testing import open_database

    kernel = make_kernel(open_database(url, schema), delay=0.05)
    await kernel.sync.run(ds_id, user_id=None)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
