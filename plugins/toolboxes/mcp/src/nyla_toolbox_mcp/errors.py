"""What a call to an MCP server can fail with, importable without loading the MCP SDK
(plugin discovery imports the toolbox; the SDK loads on the first call)."""

from __future__ import annotations


class ServerTimeout(TimeoutError):
    """The server did not start (``phase="start"``) or answer (``"call"``) within its bound."""

    def __init__(self, phase: str, seconds: float) -> None:
        super().__init__(f"no answer within {seconds:g} s ({phase})")
        self.phase = phase
        self.seconds = seconds
