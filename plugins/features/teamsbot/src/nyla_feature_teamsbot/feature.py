"""The Teams bot as a nyla feature: its transcript as the data table a feature data agent
reads, and :meth:`TeamsBotFeature.open_bot`, which a host calls to get the bot over its
kernel's services."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nyla.sdk import BenchmarkQuestion, FeatureTable, OntologyDescriptor
from nyla_feature_teamsbot.transcript import TRANSCRIPT

if TYPE_CHECKING:  # the bot, its store and its HTTP client load when a host opens the bot
    import httpx

    from nyla_feature_teamsbot.answering import Agent, Ai
    from nyla_feature_teamsbot.bot import Access, TeamsBot
    from nyla_feature_teamsbot.settings import TeamsSettings
    from nyla_feature_teamsbot.store import TeamsStore

#: the feature's code (the bot module says the same)
FEATURE_CODE = "teamsbot"

DOMAIN_HINTS = """The Teams bot's transcript: teamsbot_messages holds every message of the
Microsoft Teams chats, channel threads and meeting chats the bot serves, one row each.
direction 'in' is a person writing to the bot, 'out' the bot's answer; source says which path
answered ('fastPath', 'agent', 'director'). Filter by conversation_id for one chat or meeting
and order by sent_at; count or list, never sum the text."""


class TranscriptProvider:
    """The transcript table, bound to the kernel's database by the feature service."""

    def __init__(self) -> None:
        self.store: TeamsStore | None = None

    def bind(self, db: Any) -> None:
        """Use ``db`` (a :class:`nyla.host.Database`)."""
        from nyla_feature_teamsbot.store import TeamsStore

        self.store = TeamsStore(db)

    async def ensure_tables(self) -> None:
        """Create the bot's tables if missing."""
        if self.store is not None:
            await self.store.ensure_tables()

    def sqlalchemy_tables(self) -> dict[str, Any]:
        """The data tables by the name the data agent sees."""
        from nyla_feature_teamsbot.tables import DATA_TABLES

        return dict(DATA_TABLES)

    async def data_version(self, feature_instance_id: str) -> str:
        """Changes with every message (the number of messages so far)."""
        if self.store is None:
            return "0"
        return str((await self.store.counts())["messages"])


class TeamsBotFeature:
    """Feature ``teamsbot``: nyla's agent in Microsoft Teams."""

    code = FEATURE_CODE
    label = "Teams bot"
    #: the transcript names people and quotes what they said: a data agent reading it is
    #: neutralised whatever its parent run does
    requires_neutralization = True

    def __init__(self) -> None:
        self._provider = TranscriptProvider()

    def tables(self) -> list[FeatureTable]:
        """The transcript."""
        return [TRANSCRIPT]

    def data_provider(self) -> TranscriptProvider:
        """Where the transcript lives."""
        return self._provider

    def get_agent_ontology(self) -> OntologyDescriptor | None:
        """None: the transcript is one table, the hints say enough."""
        return None

    def get_agent_domain_hints(self) -> str:
        """How to read the transcript."""
        return DOMAIN_HINTS

    def benchmark_questions(self) -> list[BenchmarkQuestion]:
        """None: the bot's answers depend on live chats."""
        return []

    def open_bot(
        self,
        *,
        db: Any,
        ai: Ai,
        agent: Agent,
        settings: TeamsSettings | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        access: Access | None = None,
    ) -> TeamsBot:
        """The bot over a host's database (``kernel.db``), AI service (``kernel.ai``) and
        agent runtime (``kernel.agent``); ``transport`` carries its calls to Microsoft (a
        test's fake at the wire; the network otherwise); ``access(user, mandate,
        permission)`` asks the kernel's service access before the bot answers (a user
        without ``service.agent`` gets no model call). Close it with ``aclose``."""
        import httpx

        from nyla_feature_teamsbot.auth import ChannelAuth
        from nyla_feature_teamsbot.bot import TeamsBot
        from nyla_feature_teamsbot.connector import BotConnector
        from nyla_feature_teamsbot.settings import TeamsSettings
        from nyla_feature_teamsbot.store import TeamsStore

        settings = settings or TeamsSettings.from_config()
        http = httpx.AsyncClient(transport=transport, timeout=settings.timeout_s)
        return TeamsBot(
            TeamsStore(db),
            ai,
            agent,
            ChannelAuth(settings, http),
            BotConnector(settings, http),
            settings,
            access,
        )
