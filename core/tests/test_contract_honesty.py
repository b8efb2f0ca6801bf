"""The contract suites cannot be passed by saying nothing: capabilities come from the models,
a neutralizer suite needs samples, a toolbox clashing with the built-ins fails its suite, and
every tool is called with arguments generated from its schema."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel

from nyla import ModelCapabilities, Tool, Toolbox, hookimpl
from nyla.testing import NeutralizerContract, ProviderContract, ScriptedProvider, ToolboxContract
from nyla.testing.schema_samples import CannotSample, sample_arguments
from nyla.testing.scripted import ScriptedPlugin


class _Toolboxes:
    """A plugin object contributing the given toolboxes."""

    def __init__(self, *toolboxes: Toolbox) -> None:
        self.toolboxes = list(toolboxes)

    @hookimpl
    def nyla_toolboxes(self) -> list[Toolbox]:
        return self.toolboxes


async def _echo(ctx: Any, text: str = "x") -> str:
    """Echo the text."""
    return text


def _toolbox(toolbox_id: str, tool_name: str) -> Toolbox:
    tool = Tool.from_function(_echo, name=tool_name, read_only=True)
    return Toolbox(id=toolbox_id, label="T", description="Test tools.", tools=[tool])


# ---- neutralizer: samples are required -----------------------------------------------------


class NoSamples(NeutralizerContract):
    pass


def test_a_neutralizer_suite_without_positive_samples_fails() -> None:
    from nyla.ai import default_neutralizer

    suite = NoSamples()
    with pytest.raises(AssertionError, match="set positive_samples"):
        suite.test_samples_are_given()
    with pytest.raises(AssertionError, match="set positive_samples"):
        suite.test_findings_are_exact_spans(default_neutralizer)
    with pytest.raises(AssertionError, match="set positive_samples"):
        suite.test_gate_removes_every_finding_with_stable_placeholders(default_neutralizer)


# ---- toolbox: the contract host holds the built-ins ----------------------------------------


@pytest.mark.parametrize(
    ("toolbox", "clash"),
    [(_toolbox("dice", "readFile"), "readFile"), (_toolbox("core", "rollDice"), "core")],
)
def test_a_toolbox_clashing_with_a_builtin_fails_its_suite(toolbox: Toolbox, clash: str) -> None:
    plugin = _Toolboxes(toolbox)
    suite = ToolboxContract()
    with pytest.raises(AssertionError, match=clash):
        suite.test_plugin_registers_cleanly(plugin)
    with pytest.raises(AssertionError, match="no toolbox"):
        suite.test_tools_are_valid(plugin)


def test_a_clean_toolbox_passes_its_suite() -> None:
    plugin = _Toolboxes(_toolbox("dice", "rollDice"))
    suite = ToolboxContract()
    suite.test_plugin_registers_cleanly(plugin)
    suite.test_tools_are_valid(plugin)
    suite.test_call_without_arguments(plugin)
    suite.test_schema_generated_valid_calls(plugin)


class _Count(BaseModel):
    count: int


def test_a_schema_the_validator_disagrees_with_fails_the_generated_calls() -> None:
    async def handler(args: _Count, ctx: Any) -> int:
        return args.count

    drifted = Tool(
        name="countThings",
        description="Count things.",
        # the model is shown `amount`, the validator wants `count`
        parameters={
            "type": "object",
            "properties": {"amount": {"type": "integer"}},
            "required": ["amount"],
        },
        args_model=_Count,
        handler=handler,
    )
    plugin = _Toolboxes(Toolbox(id="drift", label="D", description="Drift.", tools=[drifted]))
    with pytest.raises(AssertionError, match="rejected schema-valid arguments"):
        ToolboxContract().test_schema_generated_valid_calls(plugin)


# ---- provider: capabilities come from the models --------------------------------------------


class StreamingSwitchedOff(ProviderContract):
    supports_streaming = False


class EmbeddingsClaimed(ProviderContract):
    supports_embeddings = True


class JsonModeSwitchedOff(ProviderContract):
    supports_json_mode = False


@pytest.mark.parametrize(
    ("suite", "flag"),
    [
        (StreamingSwitchedOff, "supports_streaming"),
        (EmbeddingsClaimed, "supports_embeddings"),
        (JsonModeSwitchedOff, "supports_json_mode"),
    ],
)
def test_a_capability_flag_contradicting_the_models_fails(suite: type, flag: str) -> None:
    plugin = ScriptedPlugin(ScriptedProvider(lambda request, index: "hi"))
    from nyla.testing.provider_contract import declared_capabilities

    instance = suite()
    instance._capabilities = declared_capabilities(plugin)  # what the autouse fixture does
    with pytest.raises(AssertionError, match=flag):
        instance.test_capability_flags_match_the_models(plugin)
    with pytest.raises(pytest.fail.Exception, match=flag):
        instance.can(flag.removeprefix("supports_"))


def test_capabilities_follow_the_declared_models() -> None:
    from nyla import OperationType
    from nyla.testing.provider_contract import declared_capabilities

    agent = [OperationType.AGENT]
    chat = ScriptedPlugin(ScriptedProvider(lambda request, index: "hi", operations=agent))
    options = {"tool_choice", "stop_sequences", "json_mode", "structured_output"}
    assert declared_capabilities(chat) == {"chat", "tools", "streaming", *options}
    plain = ScriptedPlugin(
        ScriptedProvider(
            lambda request, index: "hi",
            operations=agent,
            capabilities=ModelCapabilities(streaming=True, tool_choice=True, json_mode=True),
        )
    )
    # tool_choice means nothing without tools
    assert declared_capabilities(plain) == {"chat", "streaming", "json_mode"}
    both = ScriptedPlugin(
        ScriptedProvider(
            lambda request, index: "hi",
            operations=[*agent, OperationType.WEB_SEARCH],
            embed_fn=lambda texts: [[1.0]] * len(texts),
        )
    )
    assert declared_capabilities(both) == {
        "chat",
        "tools",
        "streaming",
        "embeddings",
        "web_search",
        *options,
    }


# ---- the schema sampler -----------------------------------------------------------------------


SCHEMAS = [
    {"type": "object", "properties": {}},
    {
        "type": "object",
        "properties": {
            "city": {"type": "string", "minLength": 12},
            "days": {"type": "integer", "minimum": 3, "maximum": 7},
            "unit": {"enum": ["C", "F"]},
            "when": {"type": "string", "format": "date"},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
            "limit": {"anyOf": [{"type": "null"}, {"type": "number", "exclusiveMinimum": 0}]},
            "filter": {"$ref": "#/$defs/Filter"},
        },
        "required": ["city", "days", "filter"],
        "$defs": {
            "Filter": {
                "type": "object",
                "properties": {"field": {"type": "string"}, "on": {"type": "boolean"}},
                "required": ["field"],
            }
        },
    },
]


@pytest.mark.parametrize("schema", SCHEMAS)
@pytest.mark.parametrize("full", [False, True])
def test_sampled_arguments_are_valid_under_their_schema(schema: dict, full: bool) -> None:
    arguments = sample_arguments(schema, full=full)
    errors = [e.message for e in Draft202012Validator(schema).iter_errors(arguments)]
    assert errors == [], f"{arguments}: {errors}"
    required = set(schema.get("required", []))
    assert required <= set(arguments), f"required {required} missing from {arguments}"
    if full:
        assert set(arguments) == set(schema["properties"]), arguments


def test_a_pattern_cannot_be_sampled() -> None:
    schema = {
        "type": "object",
        "properties": {"iban": {"type": "string", "pattern": "^CH[0-9]{19}$"}},
        "required": ["iban"],
    }
    with pytest.raises(CannotSample, match="pattern"):
        sample_arguments(schema)
    assert sample_arguments({**schema, "required": []}, full=True) == {}


# ---- provider: a declared answer option must reach the wire ---------------------------------


def _deaf_wire() -> Any:
    """A provider declaring every answer option whose requests never carry one."""
    import httpx

    from nyla import ModelSpec, OperationType
    from nyla.sdk import OpenAICompatibleProvider
    from nyla.testing.provider_contract import OpenAIWire

    class Deaf(OpenAICompatibleProvider):
        id = "deaf"
        default_base_url = "http://deaf.local/v1"

        def catalog(self) -> list[ModelSpec]:
            capabilities = ModelCapabilities(
                tools=True,
                streaming=True,
                tool_choice=True,
                stop_sequences=True,
                json_mode=True,
                structured_output=True,
            )
            return [
                ModelSpec(
                    id="deaf:m",
                    provider="deaf",
                    name="m",
                    operation_types=[OperationType.AGENT],
                    context_window=8000,
                    price_input_chf_per_mtok=1.0,
                    price_output_chf_per_mtok=1.0,
                    capabilities=capabilities,
                )
            ]

        def answer_options(self, request: Any) -> dict[str, Any]:
            return {}

    class DeafWire(OpenAIWire):
        def provider(self, handler: Any) -> Deaf:
            return Deaf(transport=httpx.MockTransport(handler))

    return DeafWire()


@pytest.mark.parametrize(
    ("test", "args"),
    [
        ("test_wire_tool_choice_forces_the_named_tool", ()),
        ("test_wire_tool_choice_none_sends_no_call", ()),
        ("test_wire_stop_sequences_sent", ()),
        ("test_wire_json_answer", ("structured_output",)),
    ],
)
async def test_an_answer_option_that_never_reaches_the_wire_fails(test: str, args: tuple) -> None:
    from nyla.testing.provider_contract import Recorder, declared_capabilities

    wire = _deaf_wire()
    suite = ProviderContract()
    suite._capabilities = declared_capabilities(ScriptedPlugin(), wire.provider(Recorder()))
    with pytest.raises(AssertionError, match="is not sent"):
        await getattr(suite, test)(wire, *args)
