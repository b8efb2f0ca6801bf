"""The redirect of a sign-in from the command line (RFC 8252 §7.3): a one-shot HTTP listener
on 127.0.0.1 at a port the system picks, answering the first ``GET /callback`` and handing
over its query. Nothing but the loopback interface listens, and only for one sign-in."""

from __future__ import annotations

import asyncio
from types import TracebackType
from urllib.parse import parse_qsl, urlsplit

#: the longest request line read (an authorization response fits easily)
MAX_LINE = 16_384

PAGE = (
    "<!doctype html><meta charset=utf-8><title>nyla</title>"
    "<p>{text}</p><p>You may close this window.</p>"
)


class Loopback:
    """``async with Loopback() as lb``: :attr:`redirect_uri` to register, then
    ``await lb.wait(timeout)`` for the callback's query parameters."""

    def __init__(self) -> None:
        self._server: asyncio.Server | None = None
        self._answer: asyncio.Future[dict[str, str]] | None = None
        self.port = 0

    @property
    def redirect_uri(self) -> str:
        """Where the authorization server sends the browser back."""
        return f"http://127.0.0.1:{self.port}/callback"

    async def __aenter__(self) -> Loopback:
        self._answer = asyncio.get_running_loop().create_future()
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def wait(self, timeout: float) -> dict[str, str]:
        """The callback's query (``code``, ``state``, or ``error``); ``TimeoutError`` when
        none came in ``timeout`` seconds."""
        assert self._answer is not None, "use Loopback as an async context manager"
        return await asyncio.wait_for(asyncio.shield(self._answer), timeout)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), 10)
            while (await asyncio.wait_for(reader.readline(), 10)) not in (b"\r\n", b"\n", b""):
                pass  # the headers: nothing in them is needed
            parts = line[:MAX_LINE].decode("latin-1").split()
            target = urlsplit(parts[1]) if len(parts) == 3 and parts[0] == "GET" else None
            if target is None or target.path != "/callback":
                await self._reply(writer, 404, "Not a sign-in callback.")
                return
            query = dict(parse_qsl(target.query))
            if self._answer is not None and not self._answer.done():
                self._answer.set_result(query)
            text = "Sign-in failed." if query.get("error") else "Signed in to the MCP server."
            await self._reply(writer, 200, text)
        except (TimeoutError, ConnectionError, UnicodeDecodeError):
            pass
        finally:
            writer.close()

    @staticmethod
    async def _reply(writer: asyncio.StreamWriter, status: int, text: str) -> None:
        body = PAGE.format(text=text).encode()
        head = (
            f"HTTP/1.1 {status} {'OK' if status == 200 else 'Not Found'}\r\n"
            "Content-Type: text/html; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        writer.write(head.encode() + body)
        await writer.drain()
