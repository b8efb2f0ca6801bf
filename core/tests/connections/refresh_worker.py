"""One process of the token-refresh race test: waits for the go file, then asks for the
connection's (expired) access token; the token endpoint appends a line per refresh."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import httpx


async def main(url: str, schema: str, key: str, connection_id: str, log: str, go: str) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from example_drive import ExampleDrivePlugin

    from nyla.connections.service import ConnectionService
    from nyla.db import Database
    from nyla.kernel import Kernel
    from nyla.knowledge.consent import purge_connection
    from nyla.plugins import PluginHost

    def token_endpoint(request: httpx.Request) -> httpx.Response:
        with open(log, "a") as handle:
            handle.write(request.content.decode() + "\n")
        time.sleep(0.3)  # a slow vendor widens the race window
        n = len(Path(log).read_text().splitlines())
        return httpx.Response(
            200,
            json={
                "access_token": f"access-{n + 1}",
                "refresh_token": f"refresh-{n + 1}",
                "expires_in": 3600,
            },
        )

    db = Database(url, schema=schema)
    host = PluginHost.from_plugins([ExampleDrivePlugin()], names=["example"])
    kernel = Kernel(plugins=host, db=db, settings={"secret_key": key})
    service = ConnectionService(
        kernel.db,
        kernel.plugins,
        purge_index=purge_connection,
        settings=kernel.settings,
        transport=httpx.MockTransport(token_endpoint),
    )
    while not Path(go).exists():
        await asyncio.sleep(0.01)
    token = await service.tokens.access_token(connection_id)
    print(token, flush=True)
    await db.dispose()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
