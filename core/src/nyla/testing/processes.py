"""A test's HTTP server in a process of its own (a vendor's fake, an MCP server) or in a thread
of the test's process: started on 127.0.0.1 at a free port, waited for until it answers
(a process), stopped at the end."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx


def free_port() -> int:
    """A TCP port nothing listens on at 127.0.0.1 (now)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def http_server_process(
    argv: Sequence[str], *, ready_path: str = "/", start_timeout_s: float = 120.0
) -> Iterator[str]:
    """Run ``argv`` with a free port appended, until ``GET ready_path`` answers 2xx; yields
    its base URL (``http://127.0.0.1:<port>``) and terminates it on exit. A process that
    exits or does not answer within ``start_timeout_s`` raises ``RuntimeError``."""
    port = free_port()
    process = subprocess.Popen(
        [*argv, str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + start_timeout_s
        while True:
            try:
                httpx.get(f"{base}{ready_path}", timeout=2).raise_for_status()
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError(f"{argv[-1]} did not start") from None
                time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)


@contextlib.contextmanager
def http_server_thread(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve ``handler`` on 127.0.0.1 at a free port from a daemon thread; yields the base URL
    (``http://127.0.0.1:<port>``), and shuts the server down and closes its socket on exit."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
