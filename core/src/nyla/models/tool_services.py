"""What a tool may call of the kernel: the services port of :class:`~nyla.models.tools.ToolContext`.

A tool handler reaches the kernel only through ``ctx.services`` — the run user's files, their
connections, the AI service and the knowledge store's data-source policy, and the feature data
agent — each a protocol naming exactly the calls tools make. The agent runtime builds the port
from the kernel's services (:func:`nyla.agent.tool_services.tool_services`); a test hands a
tool a fake of just what it calls. Declared here, with the contracts, because ``nyla.models``
imports nothing above it; ``nyla.sdk`` re-exports every name.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Literal, NoReturn, Protocol

from nyla.models.agent import RunContext
from nyla.models.ai import AiCallRequest, AiCallResponse, ImagePart, WebSearchHit
from nyla.models.chat import WorkflowMessages
from nyla.models.datasource import ConnectionInfo
from nyla.models.files import ContentHit, FileItem, FolderInfo, FolderRemoval, Scope
from nyla.models.knowledge import PolicyValue, SectionText
from nyla.models.speech import SpeechAudio, Transcript
from nyla.models.workflow_runs import RunOptions, WorkflowRun
from nyla.models.workflows import (
    WorkflowConnection,
    WorkflowGraph,
    WorkflowNode,
    WorkflowProblem,
)

__all__ = [
    "ConnectionSession",
    "DataAgentAnswer",
    "DataSourceEntry",
    "NoServices",
    "PlaceholderSession",
    "ServiceUnavailableError",
    "ToolAi",
    "ToolConnections",
    "ToolFeatures",
    "ToolFiles",
    "ToolKnowledge",
    "ToolServices",
    "ToolSpeech",
    "ToolWorkflowRuns",
    "ToolWorkflows",
    "WorkflowMessages",
]


class ToolFiles(Protocol):
    """The run user's files and folders; every call is checked against ``context``'s scope
    (an id outside it raises :class:`~nyla.errors.FileAccessError`)."""

    @property
    def workflows(self) -> WorkflowMessages: ...

    async def save(
        self,
        name: str,
        content: bytes,
        context: RunContext,
        *,
        mime_type: str | None = None,
        folder_id: str | None = None,
        tags: Iterable[str] | None = None,
        scope: Scope = Scope.PERSONAL,
        neutralize: bool = False,
        data_source_id: str | None = None,
        dedupe: bool = True,
    ) -> FileItem: ...

    async def get(self, file_id: str, context: RunContext) -> FileItem | None: ...

    async def read_bytes(self, file_id: str, context: RunContext) -> bytes: ...

    async def read_text(self, file_id: str, context: RunContext) -> str: ...

    async def list(
        self,
        context: RunContext,
        folder_id: str | None = None,
        tags: Iterable[str] | None = None,
        search: str | None = None,
        *,
        limit: int = 500,
    ) -> list[FileItem]: ...

    async def search_content(
        self,
        context: RunContext,
        query: str,
        *,
        folder_id: str | None = None,
        file_ids: Iterable[str] | None = None,
        max_hits: int = 50,
    ) -> builtins.list[ContentHit]: ...

    async def write(
        self,
        file_id: str,
        content: bytes,
        context: RunContext,
        *,
        mode: Literal["overwrite", "append"] = "overwrite",
    ) -> FileItem: ...

    async def replace(
        self, file_id: str, old: str, new: str, context: RunContext, *, count: int | None = None
    ) -> tuple[FileItem, int]: ...

    async def update(
        self,
        file_id: str,
        context: RunContext,
        *,
        name: str | None = None,
        folder_id: str | Literal["keep"] | None = "keep",
        tags: Iterable[str] | None = None,
    ) -> FileItem: ...

    async def copy(
        self,
        file_id: str,
        context: RunContext,
        *,
        name: str | None = None,
        folder_id: str | Literal["keep"] | None = "keep",
    ) -> FileItem: ...

    async def delete(self, file_id: str, context: RunContext) -> bool: ...

    async def list_folders(
        self, context: RunContext, parent_id: str | None = None, *, all_levels: bool = False
    ) -> builtins.list[FolderInfo]: ...

    async def create_folder(
        self,
        name: str,
        context: RunContext,
        *,
        parent_id: str | None = None,
        scope: Scope = Scope.PERSONAL,
    ) -> FolderInfo: ...

    async def delete_folder(
        self, folder_id: str, context: RunContext, *, recursive: bool = False
    ) -> FolderRemoval: ...

    async def rename_folder(self, folder_id: str, name: str, context: RunContext) -> FolderInfo: ...

    async def move_folder(
        self, folder_id: str, parent_id: str | None, context: RunContext
    ) -> FolderInfo: ...


class ConnectionSession(Protocol):
    """An open connection, as a handler gets it: pass it as the ``ctx`` of the adapter's
    methods (``await session.adapter.search(session, ...)``)."""

    connection: ConnectionInfo
    #: the connector adapter (its methods are the connector protocols of ``nyla.sdk.connectors``)
    adapter: Any
    http: Any


class ToolConnections(Protocol):
    """The run user's connections to external services and the installed connectors."""

    @property
    def adapters(self) -> Mapping[str, Any]:
        """Installed connector adapters by service id."""
        ...

    async def list(self, user_id: str) -> list[ConnectionInfo]: ...

    async def get(self, connection_id: str, *, user_id: str | None) -> ConnectionInfo: ...

    def open(
        self, connection_id: str, *, user_id: str | None
    ) -> AbstractAsyncContextManager[ConnectionSession]: ...


class PlaceholderSession(Protocol):
    """A run's placeholder session (personal data -> ``[CATEGORY_n]``)."""

    def table(self) -> list[dict[str, str]]: ...


class ToolSpeech(Protocol):
    """The AI service's speech models (``ctx.services.ai.speech``): the text to speak is
    neutralized; audio is heard only by a model the run's neutralization allows; the price
    goes to ``on_cost``."""

    async def text_to_speech(
        self,
        text: str,
        *,
        context: Any = None,
        voice: str | None = None,
        language: str | None = None,
        audio_format: str = "mp3",
        model: str | None = None,
        max_cost_chf: float | None = None,
        on_cost: Callable[[float], object] | None = None,
    ) -> SpeechAudio: ...

    async def speech_to_text(
        self,
        audio: bytes,
        *,
        file_name: str,
        mime_type: str,
        context: Any = None,
        language: str | None = None,
        translate: bool = False,
        model: str | None = None,
        max_cost_chf: float | None = None,
        on_cost: Callable[[float], object] | None = None,
    ) -> Transcript: ...


class ToolAi(Protocol):
    """The AI service: a priced, budgeted, neutralised model call, the neutralization gate,
    web search and images (``on_cost`` gets their price), booking a vendor's price."""

    async def call(self, request: AiCallRequest) -> AiCallResponse: ...

    def record_cost(self, cost_chf: float, **where: Any) -> None: ...  # a vendor's price

    @property
    def speech(self) -> ToolSpeech: ...

    def neutralize_text(
        self, text: str, *, context: Any = None, session: Any = None
    ) -> tuple[str, PlaceholderSession]: ...

    async def web_search(
        self,
        query: str,
        *,
        context: Any = None,
        max_results: int = 5,
        model: str | None = None,
        max_cost_chf: float | None = None,
        allow_fallback: bool = True,
        on_cost: Callable[[float], object] | None = None,
    ) -> list[WebSearchHit]: ...

    async def generate_image(
        self,
        prompt: str,
        *,
        context: Any = None,
        model: str | None = None,
        size: str = "1024x1024",
        max_cost_chf: float | None = None,
        on_cost: Callable[[float], object] | None = None,
    ) -> list[ImagePart]: ...


class DataSourceEntry(Protocol):
    """A folder of a connection set up as a data source: its explicit policy values
    (``None``: inherited) and whether it is indexed in effect."""

    @property
    def id(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def scope(self) -> str | None: ...
    @property
    def neutralize(self) -> bool | None: ...
    @property
    def rag_index_effective(self) -> bool: ...

    def to_wire(self) -> dict[str, Any]: ...


class ToolKnowledge(Protocol):
    """The knowledge store's data-source policy (what a download inherits) and the sections
    of the run's indexed files."""

    async def resolve_policy(self, connection_id: str, path: str, field: str) -> PolicyValue: ...

    async def data_sources(self, connection_id: str) -> Sequence[DataSourceEntry]: ...

    async def read_section(self, file_id: str, section: str, context: RunContext) -> SectionText:
        """Raises ``FileAccessError`` (not indexed or not the caller's) or
        :class:`~nyla.models.knowledge.UnknownSectionError`."""
        ...


class DataAgentAnswer(Protocol):
    """What a feature data agent run produced."""

    answer: str
    status: str
    cost_chf: float

    @property
    def completed(self) -> bool: ...

    def to_wire(self) -> dict[str, Any]: ...


class ToolFeatures(Protocol):
    """The installed business features and their data agent (a sub-agent over the feature's
    tables that inherits the caller's limits, placeholders and model); ``feature_of_instance``
    names the feature (with an ontology) an instance belongs to, or raises ``NylaError``."""

    def codes(self) -> list[str]: ...

    async def feature_of_instance(self, instance_id: str, feature_code: str | None) -> str: ...

    async def run_data_agent(
        self,
        code: str,
        question: str,
        *,
        context: RunContext,
        feature_instance_id: str | None = None,
        remaining_rounds: int | None = None,
        remaining_budget_chf: float | None = None,
        parent_run_id: str | None = None,
        neutralization: PlaceholderSession | None = None,
        model: str | None = None,
    ) -> DataAgentAnswer: ...


class ToolWorkflows(Protocol):
    """The user's stored workflow graphs (the ``workflow`` toolbox); a workflow ``context``
    may not see raises ``LookupError``, an edit that does not fit the catalog ``ValueError``."""

    async def get(self, workflow_id: str, context: RunContext) -> WorkflowGraph: ...

    async def add_node(
        self,
        workflow_id: str,
        method: str,
        action: str,
        parameters: dict[str, Any],
        context: RunContext,
        *,
        node_id: str | None = None,
        position: dict[str, float] | None = None,
    ) -> WorkflowNode: ...

    async def update_node(
        self,
        workflow_id: str,
        node_id: str,
        context: RunContext,
        *,
        parameters: dict[str, Any] | None = None,
        position: dict[str, float] | None = None,
    ) -> WorkflowNode: ...

    async def remove_node(self, workflow_id: str, node_id: str, context: RunContext) -> int: ...

    async def connect(
        self, workflow_id: str, connection: WorkflowConnection, context: RunContext
    ) -> WorkflowGraph: ...

    async def disconnect(
        self, workflow_id: str, connection: WorkflowConnection, context: RunContext
    ) -> WorkflowGraph: ...

    async def validate(self, workflow_id: str, context: RunContext) -> list[WorkflowProblem]: ...

    @property
    def runs(self) -> ToolWorkflowRuns: ...


class ToolWorkflowRuns(Protocol):
    """Runs of the user's stored workflows (``runWorkflow``, ``readWorkflowRun``): a workflow
    or run ``context`` may not see raises ``LookupError``, a workflow that cannot run
    ``ValueError``."""

    async def start(
        self,
        workflow_id: str,
        context: RunContext,
        options: RunOptions | None = None,
        *,
        round_number: int = 1,
        task_number: int = 1,
    ) -> WorkflowRun: ...

    async def get(self, run_id: str, context: RunContext) -> WorkflowRun: ...

    async def wait(self, run_id: str, context: RunContext) -> WorkflowRun: ...


class ToolServices(Protocol):
    """The kernel as a tool sees it (``ctx.services``)."""

    @property
    def files(self) -> ToolFiles: ...
    @property
    def connections(self) -> ToolConnections: ...
    @property
    def ai(self) -> ToolAi: ...
    @property
    def knowledge(self) -> ToolKnowledge: ...
    @property
    def features(self) -> ToolFeatures: ...
    @property
    def workflows(self) -> ToolWorkflows: ...


class ServiceUnavailableError(RuntimeError):
    """A tool reached for a service its context does not have (built outside a run)."""


class NoServices:
    """The services of a context built outside a run: each one raises
    :class:`ServiceUnavailableError` when a tool reaches for it."""

    def _missing(self, name: str) -> NoReturn:
        raise ServiceUnavailableError(
            f"no {name} service: this tool context was built outside an agent run "
            "(pass services=... to ToolContext)"
        )

    @property
    def files(self) -> ToolFiles:
        self._missing("files")

    @property
    def connections(self) -> ToolConnections:
        self._missing("connections")

    @property
    def ai(self) -> ToolAi:
        self._missing("ai")

    @property
    def knowledge(self) -> ToolKnowledge:
        self._missing("knowledge")

    @property
    def features(self) -> ToolFeatures:
        self._missing("features")

    @property
    def workflows(self) -> ToolWorkflows:
        self._missing("workflows")
