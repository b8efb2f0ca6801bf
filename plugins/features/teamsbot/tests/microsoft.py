"""Microsoft at the wire, for the Teams bot's tests: Bot Framework's OpenID metadata and key
set (RSA keys made here, endorsed for ``msteams``), Entra ID's token endpoint, the Bot
Connector service's conversation endpoints, and activities shaped as Microsoft documents
them for Teams (personal chat, group chat, channel thread, meeting chat).

Host tests load this file with ``nyla.testing.import_file`` (a plugin is never imported)."""

from __future__ import annotations

import base64
import json
import time
import uuid
from typing import Any
from urllib.parse import unquote

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

APP_ID = "a8a6a3a4-5c6d-4e2f-9a1b-2c3d4e5f6a7b"
APP_PASSWORD = "bot-client-secret"
TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"
OTHER_TENANT = "0d4c2b18-1f3e-4c8e-8f51-6a0f9f0e3c11"
SERVICE_URL = "https://smba.trafficmanager.net/emea/"
OPENID_URL = "https://login.botframework.com/v1/.well-known/openidconfiguration"
JWKS_URL = "https://login.botframework.com/v1/.well-known/keys"
ISSUER = "https://api.botframework.com"
BOT = {"id": f"28:{APP_ID}", "name": "nyla"}
MEGAN = {
    "id": "29:1XJKJMvc5GBtc2JwZq0oj8tHZmzrQgFmB39ATiQWA85gQtHieVkKilBZ9XHoq9j7Zaqt7",
    "name": "Megan Bowen",
    "aadObjectId": "fcd0a9e2-2f1f-4a2d-9a1e-5d2f1c3b4a5e",
}
ADELE = {
    "id": "29:1pQ3wX8zL0r5nT7yU2vB9mK4jH6gF1dS3aZ5xC7vB9nM2qW4eR6tY8uI0oP",
    "name": "Adele Vance",
    "aadObjectId": "0b6a2d7e-5f3c-4e1a-8b9d-7c2e4f6a8b0c",
}
PERSONAL_ID = (
    "a:17I0kl9EkpE1O9PH5TWrzrLNwnWWcfrU7QZjKR0WSfOpzbfcAg2IaydGElSo10tVr4C7Fc6"
    "GtieTJX663WuJCc1uA83n4CSrHSgGBj5XNYLcVlJAs2ZX8DbYBPck201w-"
)
GROUP_ID = "19:c1a5f2ce47c84a7bb0f8e5e0d3a1b2c3@thread.v2"
CHANNEL_ID = "19:d8a6c5e4b3a24f1e9c7b5a3d1e2f4a6b@thread.skype;messageid=1481567603816"
MEETING_ID = "19:meeting_NjY5ZjI5YzQtMWQ4Ni00ZTg2LWE3YjYtOTQ2YjdlNjc4ZjFh@thread.v2"


def _b64(n: int) -> str:
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


class SigningKey:
    """An RSA key as Bot Framework publishes one: ``kid``, ``n``, ``e``, ``endorsements``."""

    def __init__(self, kid: str, endorsements: tuple[str, ...] = ("msteams", "webchat")) -> None:
        self.kid = kid
        self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.endorsements = list(endorsements)

    def jwk(self) -> dict[str, Any]:
        public = self.private.public_key().public_numbers()
        return {
            "kty": "RSA",
            "use": "sig",
            "kid": self.kid,
            "x5t": self.kid,
            "n": _b64(public.n),
            "e": _b64(public.e),
            "endorsements": self.endorsements,
        }


class Microsoft:
    """The fake: an httpx handler (``transport``) and what it saw."""

    def __init__(self, *, jwks_url: str = JWKS_URL) -> None:
        self.jwks_url = jwks_url  # where the metadata says the keys are
        self.key = SigningKey("key-1")
        self.unlisted = SigningKey("key-unlisted")
        self.unendorsed = SigningKey("key-skype", endorsements=("skype",))
        self.sent: list[dict[str, Any]] = []
        #: answers the Bot Connector gives before it takes a message (429, 503, ...)
        self.refusals: list[httpx.Response] = []
        self.token_requests: list[dict[str, str]] = []
        self.key_fetches = 0
        self.access_token = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.bot-token." + uuid.uuid4().hex

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def handle(self, request: httpx.Request) -> httpx.Response:
        url = str(request.url)
        if url == OPENID_URL:
            return httpx.Response(
                200,
                json={
                    "issuer": ISSUER,
                    "authorization_endpoint": "https://invalid.botframework.com",
                    "jwks_uri": self.jwks_url,
                    "id_token_signing_alg_values_supported": ["RS256"],
                    "token_endpoint_auth_methods_supported": ["private_key_jwt"],
                },
            )
        if url == JWKS_URL:
            self.key_fetches += 1
            return httpx.Response(200, json={"keys": [self.key.jwk(), self.unendorsed.jwk()]})
        if url.startswith("https://login.microsoftonline.com/") and url.endswith("/token"):
            form = dict(x.split("=", 1) for x in request.content.decode().split("&"))
            form = {k: unquote(v) for k, v in form.items()}
            self.token_requests.append(form)
            if form.get("client_secret") != APP_PASSWORD:
                return httpx.Response(401, json={"error": "invalid_client"})
            return httpx.Response(
                200,
                json={
                    "token_type": "Bearer",
                    "expires_in": 3599,
                    "ext_expires_in": 3599,
                    "access_token": self.access_token,
                },
            )
        if url.startswith(SERVICE_URL + "v3/conversations/"):
            return self._post_activity(request)
        return httpx.Response(404, json={"error": {"code": "NotFound", "message": url}})

    def _post_activity(self, request: httpx.Request) -> httpx.Response:
        if self.refusals:
            return self.refusals.pop(0)
        if request.headers.get("authorization") != f"Bearer {self.access_token}":
            return httpx.Response(401, json={"message": "Authorization has been denied"})
        rest = request.url.raw_path.decode().split("/v3/conversations/", 1)[1]
        parts = rest.split("/")
        conversation, reply_to = unquote(parts[0]), (unquote(parts[2]) if len(parts) > 2 else None)
        body = json.loads(request.content)
        activity_id = f"1:{uuid.uuid4().hex[:20]}"
        self.sent.append(
            {"conversation": conversation, "replyTo": reply_to, "body": body, "id": activity_id}
        )
        return httpx.Response(201, json={"id": activity_id})

    # tokens the channel would send -----------------------------------------------------

    def token(
        self, *, key: SigningKey | None = None, kid: str | None = None, **override: Any
    ) -> str:
        """A Bot Connector token for the bot; ``override`` changes or drops (``None``)
        claims; ``kid`` names another key than the one that signs."""
        now = int(time.time())
        claims: dict[str, Any] = {
            "serviceurl": SERVICE_URL,
            "nbf": now - 10,
            "exp": now + 3600,
            "iss": ISSUER,
            "aud": APP_ID,
        }
        for name, value in override.items():
            if value is None:
                claims.pop(name, None)
            else:
                claims[name] = value
        key = key or self.key
        return jwt.encode(claims, key.private, algorithm="RS256", headers={"kid": kid or key.kid})

    def header(self, **override: Any) -> str:
        return f"Bearer {self.token(**override)}"


def activity(
    kind: str,
    text: str,
    *,
    sender: dict[str, Any] = MEGAN,
    tenant: str = TENANT,
    conversation_id: str | None = None,
) -> dict[str, Any]:
    """A message activity as Teams sends it, for ``personal``, ``groupChat``, ``channel``
    or ``meeting`` (a meeting's chat: a group chat with ``channelData.meeting``)."""
    mention = f"<at>{BOT['name']}</at>"
    at = {"type": "mention", "text": mention, "mentioned": dict(BOT)}
    conversation: dict[str, Any] = {"conversationType": kind, "tenantId": tenant}
    channel_data: dict[str, Any] = {"tenant": {"id": tenant}}
    entities: list[dict[str, Any]] = [
        {
            "type": "clientInfo",
            "locale": "en-US",
            "country": "US",
            "platform": "Web",
            "timezone": "Europe/Zurich",
        }
    ]
    body = text
    if kind == "personal":
        conversation["id"] = conversation_id or PERSONAL_ID
    elif kind == "groupChat":
        conversation.update(id=conversation_id or GROUP_ID, isGroup=True)
        body, entities = f"{mention} {text}", [*entities, at]
    elif kind == "channel":
        conversation.update(id=conversation_id or CHANNEL_ID, isGroup=True, name="General")
        team = "19:a5b6c7d8e9f04a1b2c3d4e5f6a7b8c9d@thread.skype"
        channel_data.update(
            teamsChannelId=CHANNEL_ID.split(";")[0],
            teamsTeamId=team,
            channel={"id": CHANNEL_ID.split(";")[0]},
            team={"id": team},
        )
        body, entities = f"{mention} {text}", [*entities, at]
    elif kind == "meeting":
        conversation.update(
            id=conversation_id or MEETING_ID, isGroup=True, conversationType="groupChat"
        )
        channel_data["meeting"] = {"id": "MCMxOTptZWV0aW5nX05qWTVaakk1WXpRdE1XUTROaTAw"}
        body, entities = f"{mention} {text}", [*entities, at]
    return {
        "type": "message",
        "id": str(int(time.time() * 1000)) + uuid.uuid4().hex[:6],
        "timestamp": "2026-12-02T08:40:07.437Z",
        "localTimestamp": "2026-12-02T09:40:07.437+01:00",
        "serviceUrl": SERVICE_URL,
        "channelId": "msteams",
        "from": dict(sender),
        "conversation": conversation,
        "recipient": dict(BOT),
        "textFormat": "plain",
        "text": body,
        "attachments": [],
        "entities": entities,
        "channelData": channel_data,
        "locale": "en-US",
    }
