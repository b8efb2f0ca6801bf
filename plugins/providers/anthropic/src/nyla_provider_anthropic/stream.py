"""Anthropic's streamed Messages API events as nyla stream deltas: text as it comes, tool
calls assembled from their ``input_json_delta`` pieces at ``content_block_stop``, the
answer tool's input (a JSON answer, see :mod:`nyla_provider_anthropic.convert`) as text
deltas, then usage."""

from __future__ import annotations

from typing import Any

from nyla.sdk import StreamDelta, ToolCall, Usage
from nyla_provider_anthropic.convert import usage_of


class EventAssembler:
    """Turns one stream's events into deltas; ``answer`` names the answer tool, if any."""

    def __init__(self, answer: str | None = None) -> None:
        self.answer = answer
        self.blocks: dict[int, dict[str, Any]] = {}
        self.input_tokens = 0
        self.output_tokens = 0
        self.stop_reason: str | None = None
        self.answered = False

    def feed(self, data: dict[str, Any]) -> list[StreamDelta]:
        """Deltas to emit for one event (a dict as the SDK dumps it)."""
        kind = data.get("type")
        if kind == "message_start":
            usage = usage_of((data.get("message") or {}).get("usage"))
            self.input_tokens, self.output_tokens = usage.input_tokens, usage.output_tokens
        elif kind == "content_block_start":
            self.blocks[data["index"]] = {**data["content_block"], "json": ""}
        elif kind == "content_block_delta":
            return self._delta(data["index"], data.get("delta") or {})
        elif kind == "content_block_stop":
            return self._stop(data["index"])
        elif kind == "message_delta":
            self.stop_reason = (data.get("delta") or {}).get("stop_reason") or self.stop_reason
            out = (data.get("usage") or {}).get("output_tokens")
            if out is not None:
                self.output_tokens = int(out)
        return []

    def _is_answer(self, block: dict[str, Any]) -> bool:
        return bool(self.answer) and block.get("name") == self.answer

    def _delta(self, index: int, delta: dict[str, Any]) -> list[StreamDelta]:
        if delta.get("type") == "text_delta" and delta.get("text"):
            return [StreamDelta(kind="text", text=delta["text"])]
        if delta.get("type") != "input_json_delta":
            return []
        block = self.blocks.setdefault(index, {"type": "tool_use", "json": ""})
        piece = delta.get("partial_json") or ""
        if self._is_answer(block):
            self.answered = True
            return [StreamDelta(kind="text", text=piece)] if piece else []
        block["json"] += piece
        return []

    def _stop(self, index: int) -> list[StreamDelta]:
        block = self.blocks.pop(index, None)
        if not block or block.get("type") != "tool_use" or self._is_answer(block):
            return []
        call = ToolCall(
            id=block.get("id", ""), name=block.get("name", ""), arguments=block["json"] or "{}"
        )
        return [StreamDelta(kind="tool_call", tool_call=call)]

    def finish(self) -> list[StreamDelta]:
        """Usage and ``done``; a stream that ended in the answer tool ends its turn."""
        usage = Usage(input_tokens=self.input_tokens, output_tokens=self.output_tokens)
        reason = self.stop_reason
        if self.answered and reason == "tool_use":
            reason = "end_turn"
        return [
            StreamDelta(kind="usage", usage=usage),
            StreamDelta(kind="done", usage=usage, finish_reason=reason),
        ]
