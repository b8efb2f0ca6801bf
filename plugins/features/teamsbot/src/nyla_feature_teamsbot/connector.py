"""What the bot sends: message activities through the Bot Connector REST API, with the bot's
own token from Microsoft Entra ID (client credentials, scope
``https://api.botframework.com/.default``), cached until shortly before it expires.

- a reply: ``POST {serviceUrl}/v3/conversations/{conversationId}/activities/{activityId}``
- a new message in a conversation: ``POST {serviceUrl}/v3/conversations/{conversationId}/activities``

Every call has the settings' timeout; a failure is a :class:`DeliveryError` with the status.
Teams throttles bots per conversation: a 429 or 5xx is tried again (three tries at most),
after the ``Retry-After`` the service asks for (10 s at most) or a doubling pause; a 401
gets one fresh token.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

import httpx

from nyla_feature_teamsbot.settings import SCOPE, TeamsSettings

#: a token is renewed this long before Entra ID says it expires
RENEW_EARLY_S = 300
#: tries of one send, and the longest pause between two
SEND_TRIES = 3
MAX_PAUSE_S = 10.0


class DeliveryError(Exception):
    """A message the Bot Connector service did not take."""


class BotConnector:
    """Sends message activities as the bot."""

    def __init__(
        self,
        settings: TeamsSettings,
        http: httpx.AsyncClient,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.settings = settings
        self.http = http
        self.clock = clock
        self.sleep = sleep
        self._token: str | None = None
        self._expires_at = 0.0
        self._lock = asyncio.Lock()

    async def send(
        self,
        service_url: str,
        conversation_id: str,
        activity: dict[str, Any],
        reply_to: str | None = None,
    ) -> str | None:
        """Post ``activity`` into the conversation (as a reply to ``reply_to`` when given);
        the id the service gave the new activity."""
        path = f"v3/conversations/{quote(conversation_id, safe='')}/activities"
        if reply_to:
            path += f"/{quote(reply_to, safe='')}"
        url = f"{service_url.rstrip('/')}/{path}"
        response = await self._post(url, activity)
        try:
            body = response.json()
        except ValueError:
            return None
        return body.get("id") if isinstance(body, dict) else None

    async def _post(self, url: str, activity: dict[str, Any]) -> httpx.Response:
        pause = 1.0
        for attempt in range(1, SEND_TRIES + 1):
            token = await self.token()
            try:
                response = await self.http.post(
                    url,
                    json=activity,
                    headers={"Authorization": f"Bearer {token}"},
                    timeout=self.settings.timeout_s,
                )
            except httpx.HTTPError as exc:
                raise DeliveryError(f"the Bot Connector service is unreachable: {exc}") from exc
            if response.status_code == 401 and attempt == 1:
                self._token = None  # revoked or expired early: one fresh token, once
                continue
            again = response.status_code == 429 or response.status_code >= 500
            if not again or attempt == SEND_TRIES:
                break
            await self.sleep(min(_retry_after(response) or pause, MAX_PAUSE_S))
            pause *= 2
        if response.status_code >= 300:
            raise DeliveryError(f"the Bot Connector service answered {response.status_code}")
        return response

    async def token(self) -> str:
        """The bot's access token for the Bot Connector service (cached)."""
        async with self._lock:
            if self._token and self.clock() < self._expires_at:
                return self._token
            settings = self.settings
            if not settings.configured:
                raise DeliveryError(
                    "the bot's app registration is not configured: " + "; ".join(settings.missing())
                )
            url = f"{settings.login_url}/{quote(settings.app_tenant, safe='')}/oauth2/v2.0/token"
            form = {
                "grant_type": "client_credentials",
                "client_id": settings.app_id or "",
                "client_secret": settings.app_password or "",
                "scope": SCOPE,
            }
            try:
                response = await self.http.post(url, data=form, timeout=settings.timeout_s)
            except httpx.HTTPError as exc:
                raise DeliveryError(f"Microsoft Entra ID is unreachable: {exc}") from exc
            if response.status_code != 200:
                raise DeliveryError(
                    f"Microsoft Entra ID refused the bot's token: "
                    f"{response.status_code} {_error(response)}"
                )
            body = response.json()
            self._token = str(body["access_token"])
            lifetime = float(body.get("expires_in", 3599))
            self._expires_at = self.clock() + max(lifetime - RENEW_EARLY_S, 0.0)
            return self._token


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return max(float(response.headers.get("retry-after", "")), 0.0)
    except ValueError:
        return None


def _error(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return ""
    return str(body.get("error", "")) if isinstance(body, dict) else ""
