"""Answer-option tests of the provider contract: ``tool_choice`` (a named tool, ``required``,
``none``), stop sequences and JSON answers (JSON mode, structured output), each sent in the
vendor's documented fields through the real AI service, and refused before any HTTP call
for a model that does not declare the capability it needs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nyla.testing.provider_base import ANSWER_OPTIONS, WEATHER_TOOL, ProviderContractBase
from nyla.testing.provider_wire import ProviderWire, Recorder

TIME_TOOL: dict[str, Any] = {
    "name": "get_time",
    "description": "Current local time of a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
FORECAST = {"city": "Bern", "temperature_c": 21, "sunny": True}
FORECAST_SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "temperature_c": {"type": "integer"},
        "sunny": {"type": "boolean"},
    },
    "required": ["city", "temperature_c", "sunny"],
    "additionalProperties": False,
}


def _body(request: Any) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(request.content)
    return body


class AnswerOptionTests(ProviderContractBase):
    """The answer-option part of the provider contract (``tool_choice``, ``stop``,
    ``response_format``)."""

    def _sent(self, request: Any, expected: dict[str, Any], what: str) -> None:
        """``expected`` body fields are in the recorded HTTP ``request`` with those values."""
        body = _body(request)
        for field, value in expected.items():
            assert field in body, (
                f"{type(self).__name__}: {what} is not sent: the body has no {field!r} "
                f"(fields: {sorted(body)})"
            )
            assert body[field] == value, (
                f"{type(self).__name__}: {what} is sent as {field}={body[field]!r}, the "
                f"vendor documents {value!r}"
            )

    def _two_tools(self) -> list[Any]:
        from nyla.models.ai import ToolDefinition

        return [ToolDefinition(**WEATHER_TOOL), ToolDefinition(**TIME_TOOL)]

    async def _forced(self, wire: ProviderWire, choice: Any) -> None:
        rec = Recorder(wire.tool_call_reply("call_f1", "get_time", '{"city": "Chur"}'))
        provider = wire.provider(rec)
        ai = self._service(provider)
        model = self._option_model(provider, "tool_choice")
        request = self._request(
            provider,
            "What time is it in Chur?",
            model=model,
            tools=self._two_tools(),
            tool_choice=choice,
        )
        response = await ai.call(request)
        self._sent(rec.requests[0], wire.tool_choice_fields(choice), f"tool_choice {choice.mode}")
        assert [c.name for c in response.tool_calls] == ["get_time"], (
            f"{model}: tool_choice {choice.mode} answered with tool calls "
            f"{[c.name for c in response.tool_calls]}, not the vendor's get_time"
        )
        assert json.loads(response.tool_calls[0].arguments) == {"city": "Chur"}, (
            f"{model}: the forced call's arguments changed on the way"
        )

    async def test_wire_tool_choice_forces_the_named_tool(self, wire: ProviderWire) -> None:
        """A named tool (the second of two offered) goes out in the vendor's form."""
        self._need(self.can("chat") and self.can("tool_choice"), "tool_choice")
        from nyla.models.chat_options import ToolChoice

        await self._forced(wire, ToolChoice.tool("get_time"))

    async def test_wire_tool_choice_required(self, wire: ProviderWire) -> None:
        """``required`` (some tool call) goes out in the vendor's form."""
        self._need(self.can("chat") and self.can("tool_choice"), "tool_choice")
        from nyla.models.chat_options import ToolChoice

        await self._forced(wire, ToolChoice(mode="required"))

    async def test_wire_tool_choice_none_sends_no_call(self, wire: ProviderWire) -> None:
        """``none`` goes out in the vendor's form and the text answer has no tool call."""
        self._need(self.can("chat") and self.can("tool_choice"), "tool_choice")
        from nyla.models.chat_options import ToolChoice

        rec = Recorder(wire.chat_reply("I will not look it up.", 30, 7))
        provider = wire.provider(rec)
        ai = self._service(provider)
        model = self._option_model(provider, "tool_choice")
        choice = ToolChoice(mode="none")
        request = self._request(
            provider,
            "Weather in Bern?",
            model=model,
            tools=self._two_tools(),
            tool_choice=choice,
        )
        response = await ai.call(request)
        self._sent(rec.requests[0], wire.tool_choice_fields(choice), "tool_choice none")
        assert response.tool_calls == [], f"{model}: tool calls under tool_choice none"
        assert response.content == "I will not look it up.", f"{model}: {response.content!r}"

    async def test_wire_stop_sequences_sent(self, wire: ProviderWire) -> None:
        """Stop sequences go out in the vendor's field."""
        self._need(self.can("chat") and self.can("stop_sequences"), "stop sequences")
        rec = Recorder(wire.chat_reply("1, 2, 3", 20, 5))
        provider = wire.provider(rec)
        ai = self._service(provider)
        model = self._option_model(provider, "stop_sequences")
        stop = ["\n\n", "END"]
        response = await ai.call(self._request(provider, "Count", model=model, stop=stop))
        self._sent(rec.requests[0], wire.stop_fields(stop), "the stop sequences")
        assert response.content == "1, 2, 3", f"{model}: {response.content!r}"

    def _json_request(self, provider: Any, capability: str) -> tuple[str, Any]:
        from nyla.models.chat_options import ResponseFormat

        model = self._option_model(provider, capability)
        if capability == "json_mode":
            return model, ResponseFormat.json_object()
        return model, ResponseFormat.structured("forecast", FORECAST_SCHEMA)

    @pytest.mark.parametrize("capability", ["json_mode", "structured_output"])
    async def test_wire_json_answer(self, wire: ProviderWire, capability: str) -> None:
        """JSON mode / structured output goes out in the vendor's form; the answer's content
        is the JSON the vendor sent."""
        self._need(self.can("chat") and self.can(capability), capability)
        probe = wire.provider(Recorder())
        model, response_format = self._json_request(probe, capability)
        rec = Recorder(wire.json_reply(response_format, FORECAST))
        provider = wire.provider(rec)
        ai = self._service(provider)
        request = self._request(
            provider, "The forecast for Bern as JSON.", model=model, response_format=response_format
        )
        response = await ai.call(request)
        self._sent(rec.requests[0], wire.response_format_fields(response_format), f"{capability}")
        assert json.loads(response.content) == FORECAST, (
            f"{model}: {capability} answered {response.content!r}, not the vendor's JSON"
        )
        assert response.tool_calls == [], f"{model}: a JSON answer came back as a tool call"

    async def test_wire_streamed_json_answer(self, wire: ProviderWire) -> None:
        """A streamed JSON answer reassembles to the vendor's JSON."""
        able = [c for c in ("structured_output", "json_mode") if self.can(c)]
        self._need(self.can("chat") and self.can("streaming") and bool(able), "streamed JSON")
        probe = wire.provider(Recorder())
        model, response_format = self._json_request(probe, able[0])
        rec = Recorder(wire.stream_json_reply(response_format, FORECAST))
        provider = wire.provider(rec)
        ai = self._service(provider)
        request = self._request(
            provider, "The forecast for Bern as JSON.", model=model, response_format=response_format
        )
        deltas = [d async for d in ai.stream(request)]
        self._sent(rec.requests[0], wire.response_format_fields(response_format), able[0])
        text = "".join(d.text for d in deltas if d.kind == "text")
        assert json.loads(text) == FORECAST, f"{model}: streamed JSON reassembled as {text!r}"
        assert deltas[-1].kind == "done" and json.loads(deltas[-1].response.content) == FORECAST

    async def test_wire_undeclared_options_refused_before_the_call(
        self, wire: ProviderWire
    ) -> None:
        """A model that does not declare an option's capability is refused by the AI service
        with a typed error, and nothing reaches the vendor."""
        self._need(self.can("chat"), "chat")
        from nyla.errors import UnsupportedCapabilityError

        rec = Recorder(wire.chat_reply("never sent", 1, 1))
        provider = wire.provider(rec)
        ai = self._service(provider)
        tried = 0
        for spec in provider.models():
            if self.chat_operation not in spec.operation_types or not spec.available:
                continue
            for capability in ANSWER_OPTIONS:
                if getattr(spec.capabilities, capability):
                    continue
                request = self._request(provider, "hi", model=spec.id, **_asking(capability))
                with pytest.raises(UnsupportedCapabilityError) as info:
                    await ai.call(request)
                assert info.value.capability == capability, (
                    f"{spec.id}: refused for {info.value.capability}, not {capability}"
                )
                tried += 1
        assert not rec.requests, (
            f"{type(self).__name__}: {len(rec.requests)} requests reached the vendor for "
            "options the model does not declare"
        )
        if not tried:
            pytest.skip("every chat model declares every answer option")


def _asking(capability: str) -> dict[str, Any]:
    """Request fields that need ``capability``."""
    from nyla.models.ai import ToolDefinition
    from nyla.models.chat_options import ResponseFormat, ToolChoice

    if capability == "tool_choice":
        return {"tools": [ToolDefinition(**WEATHER_TOOL)], "tool_choice": ToolChoice(mode="none")}
    if capability == "stop_sequences":
        return {"stop": ["END"]}
    if capability == "json_mode":
        return {"response_format": ResponseFormat.json_object()}
    return {"response_format": ResponseFormat.structured("forecast", FORECAST_SCHEMA)}
