"""The headers every response of the host carries: the page keeps its API token in
``localStorage``, so nothing but the page's own script may run in it, no other site may frame
it, and no URL of it (ids in paths) goes out as a referrer."""

from __future__ import annotations

from starlette.types import Message

#: the page loads /static/app.js and /static/app.css and talks to its own origin; inline
#: script and style attributes are refused (app.js sets styles through the CSSOM)
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
        "object-src 'none'",
    ]
)
SECURITY_HEADERS: dict[str, str] = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
}
_ENCODED = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in SECURITY_HEADERS.items()]


def with_security_headers(message: Message) -> Message:
    """A response's start message with :data:`SECURITY_HEADERS` added where the response
    does not set them itself (the host's middleware, :mod:`nyla_host.request_gate`, passes
    every response start through here)."""
    headers = list(message.get("headers") or [])
    present = {name.lower() for name, _ in headers}
    headers += [(k, v) for k, v in _ENCODED if k not in present]
    return {**message, "headers": headers}
