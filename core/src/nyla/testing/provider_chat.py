"""Chat tests of the provider contract: text, usage and cost, tool calls, streaming, malformed
tool arguments and image input, each run against the provider's wire fake."""

from __future__ import annotations

import json

import pytest

from nyla.testing.provider_base import PNG_1X1, ProviderContractBase, _user
from nyla.testing.provider_wire import ProviderWire, Recorder


class ChatTests(ProviderContractBase):
    """The chat part of the provider contract."""

    async def test_wire_plain_chat_usage_and_cost(self, wire: ProviderWire) -> None:
        self._need(self.can("chat"), "chat")
        rec = Recorder(wire.chat_reply("Grüezi from the wire", 1200, 340))
        provider = wire.provider(rec)
        ai = self._service(provider)
        response = await ai.call(self._request(provider, "Say hello"))
        assert response.content == "Grüezi from the wire", (
            f"{response.model}: answer text {response.content!r} not the vendor's"
        )
        assert (response.usage.input_tokens, response.usage.output_tokens) == (1200, 340), (
            f"{response.model}: usage {response.usage} is not the vendor's 1200 in / 340 out"
        )
        spec = ai.model_spec(response.model)
        assert spec.price_input_chf_per_mtok is not None, f"{spec.id} lists no input price"
        assert spec.price_output_chf_per_mtok is not None, f"{spec.id} lists no output price"
        # from the listed prices, per million tokens, plus the per-call fee
        expected = (
            1200 * spec.price_input_chf_per_mtok + 340 * spec.price_output_chf_per_mtok
        ) / 1_000_000 + (spec.price_per_call_chf or 0.0)
        assert response.cost_chf == pytest.approx(expected), (
            f"{spec.id}: cost {response.cost_chf} CHF for 1200 in / 340 out, listed prices "
            f"give {expected} CHF"
        )
        assert len(rec.requests) == 1, f"{len(rec.requests)} HTTP requests for one chat call"
        assert "Say hello" in rec.requests[0].content.decode(), (
            "the user message is not in the request body"
        )

    async def test_wire_tool_call_round_trip(self, wire: ProviderWire) -> None:
        self._need(self.can("chat") and self.can("tools"), "tools")
        from nyla.models.ai import Message, Role

        rec = Recorder(
            wire.tool_call_reply("call_w1", "get_weather", '{"city": "Bern"}'),
            wire.chat_reply("It is sunny in Bern.", 80, 9),
        )
        provider = wire.provider(rec)
        ai = self._service(provider)
        first = await ai.call(self._request(provider, "Weather in Bern?", tools=self._tools()))
        assert [(c.id, c.name) for c in first.tool_calls] == [("call_w1", "get_weather")]
        assert json.loads(first.tool_calls[0].arguments) == {"city": "Bern"}, (
            f"tool arguments {first.tool_calls[0].arguments!r} changed on the way"
        )
        sent_tools = rec.requests[0].content.decode()
        assert "get_weather" in sent_tools and "city" in sent_tools, (
            "the tool definition is not in the request body"
        )
        messages = [
            *_user("Weather in Bern?"),
            Message(role=Role.ASSISTANT, tool_calls=first.tool_calls),
            Message(role=Role.TOOL, tool_call_id="call_w1", content="sunny, 21 C"),
        ]
        req = self._request(provider, "", tools=self._tools()).model_copy(
            update={"messages": messages}
        )
        final = await ai.call(req)
        assert final.content == "It is sunny in Bern.", (
            f"answer after the tool result: {final.content!r}"
        )
        assert wire.tool_result_in(rec.requests[1], "call_w1") == "sunny, 21 C"

    async def test_wire_streaming_text(self, wire: ProviderWire) -> None:
        self._need(self.can("chat") and self.can("streaming"), "streaming")
        rec = Recorder(wire.stream_reply(["Hel", "lo ", "Zür", "ich"], 42, 4))
        provider = wire.provider(rec)
        ai = self._service(provider)
        deltas = [d async for d in ai.stream(self._request(provider, "Greet"))]
        texts = [d.text for d in deltas if d.kind == "text"]
        assert "".join(texts) == "Hello Zürich" and len(texts) >= 2, (
            f"streamed text deltas {texts} do not reassemble to the vendor's"
        )
        done = deltas[-1]
        assert done.kind == "done", f"the stream ends with {done.kind!r}, not done"
        assert (done.usage.input_tokens, done.usage.output_tokens) == (42, 4), (
            f"streamed usage {done.usage} is not the vendor's 42 in / 4 out"
        )
        assert done.response.content == "Hello Zürich", (
            "the final response of the stream lacks the full text"
        )

    async def test_wire_streamed_tool_call_reassembled(self, wire: ProviderWire) -> None:
        self._need(
            self.can("chat") and self.can("streaming") and self.can("tools"),
            "streamed tool calls",
        )
        rec = Recorder(
            wire.stream_tool_call_reply("call_s1", "get_weather", ['{"ci', 'ty": "Ba', 'sel"}'])
        )
        provider = wire.provider(rec)
        ai = self._service(provider)
        req = self._request(provider, "Weather?", tools=self._tools())
        deltas = [d async for d in ai.stream(req)]
        calls = [d.tool_call for d in deltas if d.kind == "tool_call"]
        assert [(c.id, c.name) for c in calls] == [("call_s1", "get_weather")]
        assert json.loads(calls[0].arguments) == {"city": "Basel"}, (
            f"streamed tool arguments reassembled as {calls[0].arguments!r}"
        )
        assert deltas[-1].kind == "done", f"the stream ends with {deltas[-1].kind!r}, not done"
        assert deltas[-1].response.tool_calls == calls, (
            "the final response lacks the streamed tool calls"
        )

    async def test_wire_malformed_tool_arguments_kept_as_error(self, wire: ProviderWire) -> None:
        self._need(self.can("chat") and self.can("tools"), "tools")
        broken = '{"city": "Bern"'
        if self.malformed_arguments_via == "stream":
            rec = Recorder(wire.stream_tool_call_reply("call_m1", "get_weather", [broken]))
        else:
            rec = Recorder(wire.tool_call_reply("call_m1", "get_weather", broken))
        provider = wire.provider(rec)
        ai = self._service(provider)
        req = self._request(provider, "Weather?", tools=self._tools())
        if self.malformed_arguments_via == "stream":
            deltas = [d async for d in ai.stream(req)]
            response = deltas[-1].response
        else:
            response = await ai.call(req)
        assert [c.id for c in response.tool_calls] == ["call_m1"], (
            "a tool call with malformed arguments was dropped"
        )
        assert response.tool_calls[0].arguments == broken, (
            "malformed tool arguments were altered instead of kept"
        )
        errors = response.invalid_tool_arguments
        assert errors and errors[0].id == "call_m1" and "invalid JSON" in errors[0].error, (
            f"malformed arguments not reported: {errors}"
        )

    async def test_wire_image_input(self, wire: ProviderWire) -> None:
        """A model declaring ``vision`` gets the image of a user message in its request."""
        self._need(self.can("chat") and self.can("vision"), "vision")
        from nyla.models.ai import (
            AiCallRequest,
            ImagePart,
            Message,
            OperationType,
            Role,
            TextPart,
        )

        rec = Recorder(wire.chat_reply("A single pixel.", 90, 5))
        provider = wire.provider(rec)
        ai = self._service(provider)
        vision = [
            s.id
            for s in provider.models()
            if s.capabilities.vision and self.chat_operation in s.operation_types and s.available
        ]
        assert vision, f"no available {self.chat_operation} model declaring vision"
        content: list[TextPart | ImagePart] = [
            TextPart(text="What is this?"),
            ImagePart(data_base64=PNG_1X1),
        ]
        request = AiCallRequest(
            operation=OperationType(self.chat_operation),
            model=vision[0],
            messages=[Message(role=Role.USER, content=content)],
        )
        response = await ai.call(request)
        assert response.content == "A single pixel.", f"{vision[0]}: {response.content!r}"
        body = rec.requests[0].content.decode()
        assert PNG_1X1 in body, f"{vision[0]}: the image is not in the request body"
