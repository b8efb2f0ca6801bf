"""One process of the Atlassian refresh-token race: waits for the go file, then asks for
the Jira connection's expired access token. The token endpoint rotates like Atlassian's:
each refresh token works once (a reused one is answered 403 invalid_grant); the shared
state lives in files so both processes see one vendor."""

from __future__ import annotations

import asyncio
import fcntl
import json
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs

import httpx


def atlassian(state: Path, log: Path):
    def token_endpoint(request: httpx.Request) -> httpx.Response:
        form = {k: v[0] for k, v in parse_qs(request.content.decode()).items()}
        with state.open("r+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            current = json.loads(handle.read())
            with log.open("a") as out:
                out.write(f"{form.get('refresh_token')}\n")
            time.sleep(0.3)  # a slow vendor widens the race window
            if form.get("refresh_token") != current["refresh"]:
                return httpx.Response(
                    403,
                    json={
                        "error": "invalid_grant",
                        "error_description": "Unknown or invalid refresh token.",
                    },
                )
            n = current["n"] + 1
            handle.seek(0)
            handle.truncate()
            handle.write(json.dumps({"n": n, "refresh": f"refresh-{n}"}))
        return httpx.Response(
            200,
            json={
                "access_token": f"access-{n}",
                "refresh_token": f"refresh-{n}",
                "expires_in": 3600,
                "scope": "read:jira-work offline_access",
                "token_type": "Bearer",
            },
        )

    return token_endpoint


async def main(
    url: str, schema: str, key: str, connection_id: str, state: str, log: str, go: str
) -> None:
    import nyla_connector_jira
    from nyla.testing import connection_service, open_database

    db = open_database(url, schema)
    service = connection_service(
        nyla_connector_jira,
        db=db,
        vendor=atlassian(Path(state), Path(log)),
        secret_key=key,
        names=["jira"],
    )
    while not Path(go).exists():
        await asyncio.sleep(0.01)
    print(await service.tokens.access_token(connection_id), flush=True)
    await db.dispose()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
