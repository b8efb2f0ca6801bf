"""What a call to an MCP server can fail with, importable without loading the MCP SDK
(plugin discovery imports the toolbox; the SDK loads on the first call)."""

from __future__ import annotations


class ServerTimeout(TimeoutError):
    """The server did not start (``phase="start"``) or answer (``"call"``) within its bound."""

    def __init__(self, phase: str, seconds: float) -> None:
        super().__init__(f"no answer within {seconds:g} s ({phase})")
        self.phase = phase
        self.seconds = seconds


class OAuthError(Exception):
    """A sign-in step failed: the reason (never a token), and the OAuth ``error`` code when
    the authorization server gave one (``invalid_grant``: the refresh token is spent)."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


class SignInRequired(Exception):
    """The user has no usable sign-in to the OAuth server ``server`` (never signed in,
    signed out, or the tokens expired and could not be refreshed)."""

    def __init__(self, server: str, why: str = "not signed in") -> None:
        super().__init__(f"{why}: sign in to the MCP server {server!r} first")
        self.server = server
        self.why = why
