"""The Teams bot's settings: the Azure bot's app registration and Microsoft's endpoints."""

from __future__ import annotations

from dataclasses import dataclass

from nyla.sdk import ConfigurationError, config_value, missing_reason

#: Bot Framework's OpenID metadata: the keys the channel signs its tokens with
OPENID_URL = "https://login.botframework.com/v1/.well-known/openidconfiguration"
#: the issuer of every token the Bot Connector service sends a bot
ISSUER = "https://api.botframework.com"
#: Microsoft Entra ID's token service (the bot's own token, client credentials)
LOGIN_URL = "https://login.microsoftonline.com"
#: the scope of the bot's token for the Bot Connector service
SCOPE = "https://api.botframework.com/.default"
#: the tenant a multi-tenant bot asks for its token
MULTI_TENANT = "botframework.com"


@dataclass(frozen=True)
class TeamsSettings:
    """``app_id`` and ``app_password`` are the Azure bot's app registration (its Microsoft App
    ID and a client secret); ``app_tenant`` the tenant of a single-tenant registration
    (``botframework.com`` for a multi-tenant one); ``channels`` the channel ids the bot
    accepts (``msteams``); ``timeout_s`` bounds every call to Microsoft; ``clock_skew_s`` the
    leeway on a token's validity period (Microsoft allows five minutes)."""

    app_id: str | None = None
    app_password: str | None = None
    app_tenant: str = MULTI_TENANT
    openid_url: str = OPENID_URL
    login_url: str = LOGIN_URL
    channels: tuple[str, ...] = ("msteams",)
    timeout_s: float = 10.0
    clock_skew_s: int = 300

    @classmethod
    def from_config(cls) -> TeamsSettings:
        """The settings from ``NYLA_TEAMS_*`` (environment, then nyla's config file)."""
        channels = config_value("NYLA_TEAMS_CHANNELS", "msteams") or "msteams"
        return cls(
            app_id=config_value("NYLA_TEAMS_APP_ID"),
            app_password=config_value("NYLA_TEAMS_APP_PASSWORD"),
            app_tenant=config_value("NYLA_TEAMS_APP_TENANT", MULTI_TENANT) or MULTI_TENANT,
            openid_url=config_value("NYLA_TEAMS_OPENID_URL", OPENID_URL) or OPENID_URL,
            login_url=(config_value("NYLA_TEAMS_LOGIN_URL", LOGIN_URL) or LOGIN_URL).rstrip("/"),
            channels=tuple(c.strip() for c in channels.split(",") if c.strip()),
            timeout_s=float(config_value("NYLA_TEAMS_TIMEOUT_S", "10") or 10),
        )

    @property
    def configured(self) -> bool:
        """Whether the app registration is set (without it every activity is refused)."""
        return bool(self.app_id and self.app_password)

    def missing(self) -> list[str]:
        """The settings still to set, each with where."""
        names = ("NYLA_TEAMS_APP_ID", "NYLA_TEAMS_APP_PASSWORD")
        values = (self.app_id, self.app_password)
        return [missing_reason(n) for n, v in zip(names, values, strict=True) if not v]

    def require_app_id(self) -> str:
        """The app id, or a :class:`ConfigurationError` naming the setting."""
        if not self.app_id:
            raise ConfigurationError(missing_reason("NYLA_TEAMS_APP_ID"))
        return self.app_id
