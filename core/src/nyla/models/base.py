"""Base class for wire models: snake_case in Python, camelCase on the wire."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class WireModel(BaseModel):
    """A pydantic model whose JSON form uses camelCase aliases (``by_alias``).

    Python code reads and writes snake_case attributes; :meth:`to_wire` and
    ``model_validate`` accept/emit the seeds' camelCase names.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        serialize_by_alias=True,
        arbitrary_types_allowed=True,
    )

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready dict with camelCase keys."""
        return self.model_dump(mode="json", by_alias=True)
