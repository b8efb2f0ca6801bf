"""Contracts of the AI service: operation types, normalized messages, model specs, providers.

Every provider plugin converts between these shapes and its vendor's wire format; the kernel
never sees a vendor payload.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from enum import StrEnum
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import Field, model_validator

from nyla.models.base import WireModel
from nyla.models.chat_options import (
    ResponseFormat,
    ToolChoice,
    check_options,
    required_capabilities,
)
from nyla.models.prices import usage_price_chf


class OperationType(StrEnum):
    """What a model call is for; the selector picks models by it (seeds: OperationTypeEnum)."""

    PLAN = "plan"
    DATA_ANALYSE = "dataAnalyse"
    DATA_GENERATE = "dataGenerate"
    DATA_EXTRACT = "dataExtract"
    IMAGE_ANALYSE = "imageAnalyse"
    IMAGE_GENERATE = "imageGenerate"
    NEUTRALIZATION_TEXT = "neutralizationText"
    NEUTRALIZATION_IMAGE = "neutralizationImage"
    WEB_SEARCH = "webSearch"
    WEB_CRAWL = "webCrawl"
    AGENT = "agent"
    EMBEDDING = "embedding"
    SPEECH_TEAMS = "speechTeams"
    TEXT_TO_SPEECH = "textToSpeech"
    SPEECH_TO_TEXT = "speechToText"
    #: order passages by their relevance to a query (a reranker / cross-encoder model)
    RERANK = "rerank"


#: the operations any general chat model serves (providers list these for their text models)
TEXT_OPERATIONS: tuple[OperationType, ...] = (
    OperationType.AGENT,
    OperationType.PLAN,
    OperationType.DATA_ANALYSE,
    OperationType.DATA_GENERATE,
    OperationType.DATA_EXTRACT,
    OperationType.NEUTRALIZATION_TEXT,
)


class Role(StrEnum):
    """Author of a message in the normalized conversation."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class TextPart(WireModel):
    """A piece of text inside a message."""

    type: Literal["text"] = "text"
    text: str


class ImagePart(WireModel):
    """An image inside a message: a URL or base64 data with its mime type."""

    type: Literal["image"] = "image"
    url: str | None = None
    data_base64: str | None = None
    mime_type: str = "image/png"


ContentPart = TextPart | ImagePart


class ToolCall(WireModel):
    """A tool call the model asked for. ``arguments`` is the raw JSON text the model sent,
    kept verbatim so that malformed JSON can be reported back instead of being lost."""

    id: str
    name: str
    arguments: str = "{}"


class Message(WireModel):
    """One message of the normalized conversation (system / user / assistant / tool)."""

    role: Role
    content: str | list[ContentPart] = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None

    @property
    def text(self) -> str:
        """All text parts joined (images dropped)."""
        if isinstance(self.content, str):
            return self.content
        return "".join(p.text for p in self.content if isinstance(p, TextPart))


class ToolDefinition(WireModel):
    """What the model sees of a tool: name, description and a JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


class Usage(WireModel):
    """Token usage reported by a provider for one call."""

    input_tokens: int = 0
    output_tokens: int = 0
    #: characters a speech model spoke (priced per character)
    characters: int = 0
    #: seconds of audio a speech model heard or made (priced per minute)
    audio_seconds: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            characters=self.characters + other.characters,
            audio_seconds=self.audio_seconds + other.audio_seconds,
        )


class ModelCapabilities(WireModel):
    """What a model can do; the selector and the contract suites read these flags."""

    tools: bool = False
    streaming: bool = False
    vision: bool = False
    reasoning: bool = False
    embedding_dimensions: int | None = None
    web_search: bool = False
    image_generation: bool = False
    #: a speech-to-text model that also answers in English whatever was spoken
    speech_translation: bool = False
    #: most texts one embedding request may carry (the service batches to this size)
    max_batch_size: int | None = None
    #: honours ``tool_choice`` (no call, some call, a named tool)
    tool_choice: bool = False
    #: honours ``stop`` sequences
    stop_sequences: bool = False
    #: JSON mode: answers with a JSON object on request (``response_format`` json_object)
    json_mode: bool = False
    #: structured output: answers with JSON following a given schema (json_schema)
    structured_output: bool = False
    #: the languages (ISO 639-1) an embedding model was trained on; empty: any language
    #: (hybrid search weighs its vectors less for a query in another language)
    languages: list[str] = Field(default_factory=list)


class ModelSpec(WireModel):
    """A model offered by a provider plugin.

    ``id`` is ``"<provider>:<model>"``. Prices are CHF per million tokens (vendor list prices
    are taken as CHF, as the seeds' convention says). Ranks: higher is better.
    """

    id: str
    provider: str
    name: str
    operation_types: list[OperationType]
    context_window: int
    max_output_tokens: int = 4096
    price_input_chf_per_mtok: float | None
    price_output_chf_per_mtok: float | None
    capabilities: ModelCapabilities = Field(default_factory=ModelCapabilities)
    quality_rank: int = 50
    speed_rank: int = 50
    available: bool = True
    unavailable_reason: str | None = None
    #: a fee per request on top of the token prices (e.g. a web search), CHF
    price_per_call_chf: float | None = None
    #: speech: CHF per million characters spoken, and per minute of audio heard or made
    price_per_million_chars_chf: float | None = None
    price_per_audio_minute_chf: float | None = None
    #: the model runs on the user's own premises (data sent to it does not leave); a run
    #: pinned to such a model is limited to on-premises providers at any depth
    on_premises: bool = False

    def cost_chf(self, usage: Usage) -> float | None:
        """Cost of ``usage`` in CHF, or ``None`` when the price is unknown (budget fails closed)."""
        u = usage
        return usage_price_chf(self, u.input_tokens, u.output_tokens, u.characters, u.audio_seconds)


class _AnswerOptions(WireModel):
    """The options steering an answer's form, shared by :class:`ChatRequest` and
    :class:`AiCallRequest` (see :mod:`nyla.models.chat_options`)."""

    #: which tool call the model must make (``None``: the vendor's default, ``auto``)
    tool_choice: ToolChoice | None = None
    #: sequences that end the answer where the model writes them (not included in it)
    stop: list[str] = Field(default_factory=list)
    #: the answer's form: text, a JSON object, or JSON following a schema
    response_format: ResponseFormat | None = None

    @model_validator(mode="after")
    def _options_agree(self) -> _AnswerOptions:
        check_options(getattr(self, "tools", []), self.tool_choice, self.stop)
        return self

    def required_capabilities(self) -> tuple[str, ...]:
        """The ``ModelCapabilities`` flags a model needs to answer this request."""
        if self.tool_choice is None and not self.stop and self.response_format is None:
            return ()  # no answer option (most calls): what the helper's call would say
        return required_capabilities(
            tools=getattr(self, "tools", []),
            tool_choice=self.tool_choice,
            stop=self.stop,
            response_format=self.response_format,
        )


class ChatRequest(_AnswerOptions):
    """A normalized chat request as a provider receives it (already neutralized).

    ``tool_choice``, ``stop`` and ``response_format`` reach a provider only when the model
    declares the capability they need (the AI service checks it before the call); a provider
    maps them to its vendor's fields.
    """

    model: str
    messages: list[Message]
    tools: list[ToolDefinition] = Field(default_factory=list)
    temperature: float | None = None
    max_output_tokens: int | None = None
    operation: OperationType = OperationType.AGENT

    def to_wire(self) -> dict[str, Any]:
        """The JSON form; answer options left unset are left out, so recordings made before
        they existed still match."""
        wire = super().to_wire()
        for key in ("toolChoice", "stop", "responseFormat"):
            if not wire.get(key):
                wire.pop(key, None)
        return wire


class ChatResponse(WireModel):
    """A provider's answer: text, tool calls, usage and anything vendor-specific in metadata
    (citations for Perplexity, for example)."""

    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    finish_reason: str | None = None
    model: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class StreamDelta(WireModel):
    """One streamed item: a text delta, an assembled tool call, or the closing usage.

    The AI service's last item is ``done`` with ``response``, the assembled
    :class:`AiCallResponse`.
    """

    kind: Literal["text", "tool_call", "usage", "done"]
    text: str = ""
    tool_call: ToolCall | None = None
    usage: Usage | None = None
    finish_reason: str | None = None
    response: AiCallResponse | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class EmbeddingResponse(WireModel):
    """Vectors for a batch of texts, in input order."""

    vectors: list[list[float]]
    model: str
    dimensions: int
    usage: Usage = Field(default_factory=Usage)
    #: cost of the whole batch (set by the AI service)
    cost_chf: float = 0.0


class RerankScore(WireModel):
    """One passage's relevance to the query: its position in the request and its score
    (higher is more relevant; the scale is the model's)."""

    index: int
    score: float


class RerankResponse(WireModel):
    """A reranker's answer: the passages it scored, most relevant first."""

    results: list[RerankScore]
    model: str
    usage: Usage = Field(default_factory=Usage)
    #: cost of the call (set by the AI service)
    cost_chf: float = 0.0


class WebSearchHit(WireModel):
    """One web search result."""

    url: str
    title: str = ""
    content: str = ""
    score: float | None = None


@runtime_checkable
class Provider(Protocol):
    """A model provider, contributed through ``nyla_providers``.

    ``id`` is the provider prefix of its model ids. ``models()`` must be cheap and must not
    import the vendor SDK (discovery stays fast); the call methods may. The kernel keeps the
    specs until a setting (environment, config file) changes; a provider whose list changes
    otherwise sets ``models_cacheable = False``. Methods a provider
    does not support raise :class:`NotImplementedError`; its model specs say which apply.
    Failures raise the typed errors from :mod:`nyla.errors` (``ProviderAuthError``,
    ``ProviderRateLimitError``, ``ProviderServerError``, ``ProviderTimeoutError``, ...).

    The AI service passes the full model id (``"openai:gpt-5"``) as ``request.model`` /
    ``model``; :func:`nyla.sdk.http.vendor_model` strips the prefix. A provider that generates
    images may also implement ``async generate_image(model, prompt, *, size) ->
    list[ImagePart]``; one with speech models ``async synthesize_speech(model, text, *,
    voice, language, audio_format) -> SpeechAudio`` and ``async transcribe(model, audio, *,
    file_name, mime_type, language, translate) -> Transcript`` (:mod:`nyla.models.speech`);
    one with reranking models (operation ``rerank``) ``async rerank(model, query, documents,
    *, top_n) -> RerankResponse``.
    """

    id: str

    def models(self) -> list[ModelSpec]: ...

    async def chat(self, request: ChatRequest) -> ChatResponse: ...

    def stream(self, request: ChatRequest) -> AsyncIterator[StreamDelta]: ...

    async def embed(self, model: str, texts: list[str]) -> EmbeddingResponse: ...

    async def web_search(
        self, model: str, query: str, max_results: int = 5
    ) -> list[WebSearchHit]: ...


class AiCallRequest(_AnswerOptions):
    """A request to the AI service (not to a provider): the service neutralizes it, selects a
    model (``model`` overrides the selector), checks the price against ``max_cost_chf`` (the
    caller's *remaining* budget) and calls the provider with retries and fallback.

    ``tool_choice``, ``stop`` and ``response_format`` need capabilities the model declares:
    the selector passes over models without them, and an explicit ``model`` lacking one is
    refused with :class:`~nyla.errors.UnsupportedCapabilityError` before any call.

    ``neutralization`` is the run's placeholder session (a
    ``nyla.ai.neutralize.NeutralizationSession``) so placeholders stay stable across the calls
    of one run; ``None`` starts a fresh one for this call. It is never serialized.
    """

    operation: OperationType
    messages: list[Message]
    tools: list[ToolDefinition] = Field(default_factory=list)
    temperature: float | None = None
    max_output_tokens: int | None = None
    model: str | None = None
    context: Any = None  # RunContext (typed Any to keep this module free of agent imports)
    max_cost_chf: float | None = None
    neutralization: Any = Field(default=None, exclude=True)
    #: replace placeholders in the answer (text and tool-call arguments) by the real values,
    #: so callers and tools see real data while the model only ever saw placeholders
    restore_output: bool = True
    #: fall back to the next eligible model when this one keeps failing (429, 5xx, timeout)
    allow_fallback: bool = True


class FallbackNote(WireModel):
    """A model the AI service skipped (over budget) or gave up on (kept failing) before the
    one that answered."""

    model: str
    error: str
    error_type: str


class InvalidToolArguments(WireModel):
    """A tool call whose arguments are not a JSON object. The call itself is kept verbatim;
    the agent reports the error back to the model instead of crashing."""

    id: str
    name: str
    error: str


class NeutralizationReport(WireModel):
    """What the neutralization gate did for one call."""

    #: placeholders the run's session holds after this call
    placeholders: int = 0
    #: neutralizers that failed (their findings are missing; the others still applied)
    errors: list[str] = Field(default_factory=list)


class AiCallResponse(WireModel):
    """The AI service's answer: the provider's response plus what the service did.

    Everything the service adds is a typed field (camelCase only on the wire):
    ``fallbacks`` (models tried before this one), ``retries``, ``invalid_tool_arguments``,
    ``usage_estimated`` (the provider reported no usage; the service estimated it),
    ``price_unknown`` (the model has no price: ``cost_chf`` is 0 and a budget cannot be
    enforced), ``estimated_cost_chf`` (the preflight estimate), ``duration_ms`` and
    ``neutralization``. ``metadata`` is the provider's own (vendor-specific, e.g. citations).
    """

    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    cost_chf: float = 0.0
    model: str = ""
    finish_reason: str | None = None
    fallbacks: list[FallbackNote] = Field(default_factory=list)
    retries: int = 0
    invalid_tool_arguments: list[InvalidToolArguments] = Field(default_factory=list)
    usage_estimated: bool = False
    price_unknown: bool = False
    estimated_cost_chf: float | None = None
    duration_ms: float | None = None
    neutralization: NeutralizationReport = Field(default_factory=NeutralizationReport)
    metadata: dict[str, Any] = Field(default_factory=dict)


StreamDelta.model_rebuild()
