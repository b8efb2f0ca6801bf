"""A slotted record used like a pydantic wire model, for records a hot path makes many of from
values it has already checked (issue 32: a pydantic object costs 2-7 us to build in the agent
loop, a slotted one under 1). The record's pydantic model (``_fields``, a
:class:`~nyla.models.base.WireModel`) validates what comes from outside and writes the record
out; the record itself only holds the values."""

from __future__ import annotations

import copy
from typing import Any, ClassVar, Self

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

from nyla.models.base import WireModel

_new = object.__new__


class SlottedWire:
    """Base of a slotted record whose pydantic model is ``_fields``; a subclass sets
    ``__slots__`` to the model's field names, in its order, and ``_fields``.

    Used like the model: attributes, ``Record(**fields)`` and :meth:`model_validate` (both
    validated by ``_fields``, camelCase names too), :meth:`model_dump`,
    :meth:`model_dump_json`, :meth:`to_wire`, :meth:`model_copy`, equality, ``repr``, and as a
    field of a pydantic model (validated and written out the same way). :meth:`of` makes one
    without validation, from values the caller has already checked; the pydantic model is
    built only when the record is written out."""

    __slots__ = ()
    _fields: ClassVar[type[WireModel]]
    #: the pydantic model's fields (as ``BaseModel.model_fields``)
    model_fields: ClassVar[dict[str, Any]]
    #: the slots' names, in field order
    _names: ClassVar[tuple[str, ...]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._names = tuple(cls.__slots__)
        if cls._names != tuple(cls._fields.model_fields):
            raise TypeError(f"{cls.__name__}: __slots__ are not {cls._fields.__name__}'s fields")
        cls.model_fields = cls._fields.model_fields
        cls.of = classmethod(_of(cls._names))  # type: ignore[method-assign,assignment]

    def __init__(self, **data: Any) -> None:
        _fill(self, self._fields.model_validate(data))

    @classmethod
    def of(cls, *values: Any) -> Self:
        """A record of ``values`` in field order, every one given, *without validation*: for
        a caller whose values are already of the fields' types. (Each subclass gets its own,
        made when the class is: one assignment a field, as a dataclass's ``__init__``; a loop
        over the names cost ~2 us an event more in the agent loop.)"""
        raise NotImplementedError("SlottedWire.of is made for each subclass")

    @classmethod
    def model_validate(cls, obj: Any) -> Self:
        """A record from a mapping (snake_case or camelCase names) or a record, validated."""
        if isinstance(obj, cls):
            return obj
        made = _new(cls)
        _fill(made, cls._fields.model_validate(obj))
        return made

    @classmethod
    def model_validate_json(cls, data: str | bytes) -> Self:
        """A record from its JSON form, validated."""
        made = _new(cls)
        _fill(made, cls._fields.model_validate_json(data))
        return made

    def fields(self) -> WireModel:
        """This record as its pydantic model, for writing it out. Validated again: in
        pydantic-core that is as fast as any construction without it (``WireModel.trusted``
        took twice as long), so writing a record out costs what building the model did."""
        return self._fields.model_validate({n: getattr(self, n) for n in self._names})

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        """As :meth:`pydantic.BaseModel.model_dump` (the same arguments)."""
        return self.fields().model_dump(**kwargs)

    def model_dump_json(self, **kwargs: Any) -> str:
        """As :meth:`pydantic.BaseModel.model_dump_json` (the same arguments)."""
        return self.fields().model_dump_json(**kwargs)

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready dict with camelCase keys."""
        return self.fields().to_wire()

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with ``update`` applied (not validated, as pydantic's)."""
        made = copy.deepcopy(self) if deep else copy.copy(self)
        for name, value in (update or {}).items():
            setattr(made, name, value)
        return made

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self._names)

    __hash__ = None  # type: ignore[assignment]  # mutable, as a pydantic model

    def __repr__(self) -> str:
        values = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._names)
        return f"{type(self).__name__}({values})"

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        fields = handler.generate_schema(cls._fields)
        validated = core_schema.no_info_after_validator_function(cls.model_validate, fields)
        return core_schema.json_or_python_schema(
            json_schema=validated,
            python_schema=core_schema.union_schema(
                [core_schema.is_instance_schema(cls), validated]
            ),
            serialization=core_schema.plain_serializer_function_ser_schema(
                cls.fields, return_schema=fields
            ),
        )


def _of(names: tuple[str, ...]) -> Any:
    """``of(cls, *values)`` for a record of ``names`` (field names: identifiers)."""
    if not all(n.isidentifier() for n in names):
        raise TypeError(f"not field names: {names}")
    args = ", ".join(names)
    body = "".join(f"    made.{n} = {n}\n" for n in names)
    source = f"def of(cls, {args}):\n    made = _new(cls)\n{body}    return made\n"
    namespace: dict[str, Any] = {"_new": _new}
    exec(source, namespace)  # (as dataclasses make their __init__)
    return namespace["of"]


def _fill(record: SlottedWire, fields: WireModel) -> None:
    for name, value in fields.__dict__.items():
        object.__setattr__(record, name, value)
