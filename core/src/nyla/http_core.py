"""What every vendor HTTP client of nyla reads from an answer, whoever sends it: how long
``Retry-After`` says to wait, and the human message in an error body.

It sits below both the connector layer (:mod:`nyla.connections.http`) and the plugin SDK
(:mod:`nyla.sdk.http`, which exports it), so neither has to import the other for it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import Any


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``Retry-After`` (seconds or an HTTP date)."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        from datetime import UTC, datetime

        when = parsedate_to_datetime(raw)
        return max(0.0, (when - datetime.now(UTC)).total_seconds())
    except (TypeError, ValueError):
        return None


def error_message(body: Any) -> str:
    """The human message inside a vendor error body (OpenAI / Anthropic / Mistral / Tavily
    shapes), or the body text shortened."""
    data = body
    if isinstance(body, (bytes, str)):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        try:
            data = json.loads(text)
        except ValueError:
            return text.strip()[:300]
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(data.get("detail"), dict):  # Tavily: {"detail": {"error": "..."}}
            err = data["detail"]
        if isinstance(err, dict):
            for key in ("message", "detail", "error"):
                message = err.get(key)
                if isinstance(message, str):
                    return message
        if isinstance(err, str):
            return err
        for key in ("message", "detail"):
            message = data.get(key)
            if isinstance(message, str):
                return message
    return str(data)[:300]
