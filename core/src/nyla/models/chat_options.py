"""Options of a chat request that steer the form of the answer: which tool call the model
must make (:class:`ToolChoice`), the stop sequences, and whether it answers in JSON
(:class:`ResponseFormat`).

Each option needs a capability the model declares in
:class:`~nyla.models.ai.ModelCapabilities` (``tool_choice``, ``stop_sequences``,
``json_mode``, ``structured_output``); :func:`required_capabilities` says which a request
needs, and the AI service refuses a model that lacks one before any provider is called.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import model_validator

from nyla.models.base import WireModel

#: the names OpenAI, Mistral and Anthropic all accept for a tool or a response schema
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class ToolChoice(WireModel):
    """Which tool call the model must make: ``auto`` (the model decides; the default),
    ``none`` (no tool call), ``required`` (at least one tool call, any tool) or ``tool``
    (a call of the tool ``name``).

    Where a ``ToolChoice`` is expected the strings ``"auto"``, ``"none"`` and ``"required"``
    are accepted too, and :meth:`tool` names one tool: ``ToolChoice.tool("get_weather")``.
    """

    mode: Literal["auto", "none", "required", "tool"] = "auto"
    #: the tool the model must call (``mode="tool"`` only)
    name: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_shorthand(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"mode": value}
        if isinstance(value, dict) and value.get("name") and "mode" not in value:
            return {**value, "mode": "tool"}
        return value

    @model_validator(mode="after")
    def _name_fits_mode(self) -> ToolChoice:
        if self.mode == "tool" and not self.name:
            raise ValueError("a tool choice of mode 'tool' must name the tool")
        if self.mode != "tool" and self.name:
            raise ValueError(f"a tool choice of mode {self.mode!r} names no tool")
        return self

    @classmethod
    def tool(cls, name: str) -> ToolChoice:
        """A choice forcing a call of the tool ``name``."""
        return cls(mode="tool", name=name)

    @property
    def forces_call(self) -> bool:
        """Whether the answer must contain a tool call (``required`` or a named tool)."""
        return self.mode in ("required", "tool")


class ResponseFormat(WireModel):
    """The form of the answer's text: ``text`` (the default), ``json_object`` (JSON mode: a
    JSON object, any shape) or ``json_schema`` (structured output: JSON following
    ``json_schema``, named ``name``; ``strict`` asks the vendor to enforce the schema exactly
    where it can).

    Where a ``ResponseFormat`` is expected the strings ``"text"`` and ``"json_object"`` are
    accepted too; :meth:`structured` builds the schema form.
    """

    type: Literal["text", "json_object", "json_schema"] = "text"
    name: str | None = None
    json_schema: dict[str, Any] | None = None
    strict: bool = True

    @model_validator(mode="before")
    @classmethod
    def _from_shorthand(cls, value: Any) -> Any:
        return {"type": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _schema_fits_type(self) -> ResponseFormat:
        if self.type == "json_schema":
            if not self.name or not _NAME.match(self.name):
                raise ValueError(
                    "a json_schema response format needs a name of letters, digits, '_' or "
                    f"'-' (at most 64), got {self.name!r}"
                )
            if not isinstance(self.json_schema, dict) or not self.json_schema:
                raise ValueError("a json_schema response format needs the JSON schema")
        elif self.json_schema is not None:
            raise ValueError(f"a {self.type} response format takes no schema")
        return self

    @classmethod
    def json_object(cls) -> ResponseFormat:
        """JSON mode: the answer is one JSON object."""
        return cls(type="json_object")

    @classmethod
    def structured(
        cls, name: str, schema: dict[str, Any], *, strict: bool = True
    ) -> ResponseFormat:
        """Structured output: the answer is JSON following ``schema``."""
        return cls(type="json_schema", name=name, json_schema=schema, strict=strict)

    @property
    def is_json(self) -> bool:
        """Whether the answer must be JSON."""
        return self.type != "text"


#: the capability each option needs, as named in ``ModelCapabilities``
CAPABILITY_OF = {
    "tool_choice": "tool_choice",
    "stop": "stop_sequences",
    "json_object": "json_mode",
    "json_schema": "structured_output",
}


def required_capabilities(
    *,
    tools: list[Any],
    tool_choice: ToolChoice | None,
    stop: list[str],
    response_format: ResponseFormat | None,
) -> tuple[str, ...]:
    """The model capabilities a request with these options needs (names of
    ``ModelCapabilities`` flags). ``auto`` and plain text need nothing; a tool choice
    needs ``tool_choice`` only when tools are offered (without tools there is nothing to
    choose)."""
    needs: list[str] = []
    if tool_choice is not None and tool_choice.mode != "auto" and tools:
        needs.append(CAPABILITY_OF["tool_choice"])
    if stop:
        needs.append(CAPABILITY_OF["stop"])
    if response_format is not None and response_format.is_json:
        needs.append(CAPABILITY_OF[response_format.type])
    return tuple(needs)


def check_options(tools: list[Any], tool_choice: ToolChoice | None, stop: list[str]) -> None:
    """Raise ``ValueError`` for options that contradict each other or the tools offered: a
    forced tool call without tools, a named tool that is not offered, an empty stop
    sequence."""
    if tool_choice is not None and tool_choice.forces_call and not tools:
        raise ValueError(f"tool_choice {tool_choice.mode!r} needs tools, but none are offered")
    if tool_choice is not None and tool_choice.mode == "tool":
        names = [getattr(t, "name", None) for t in tools]
        if tool_choice.name not in names:
            raise ValueError(
                f"tool_choice names {tool_choice.name!r}, which is not among the tools "
                f"offered ({', '.join(str(n) for n in names)})"
            )
    if any(not s for s in stop):
        raise ValueError("a stop sequence must not be empty")
