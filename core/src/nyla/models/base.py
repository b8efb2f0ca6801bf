"""Base class for wire models: snake_case in Python, camelCase on the wire."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any, Self, TypeVar, cast

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticUndefined

_Plan = tuple[dict[str, Any], tuple[tuple[str, Callable[[], Any]], ...], frozenset[str]]
#: per model class, what ``WireModel.trusted`` fills in (see :func:`_field_plan`)
_FIELD_PLANS: dict[type, _Plan] = {}
#: per model class, its field names (what ``copied`` may update)
_FIELD_NAMES: dict[type, frozenset[str]] = {}
_set = object.__setattr__
_new = object.__new__
_M = TypeVar("_M", bound=BaseModel)


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

    @classmethod
    def trusted(cls, **values: Any) -> Self:
        """An instance of ``values`` *without validation*, for internal paths whose values
        are already of the fields' types (checked when they entered). Unset fields get their
        defaults, as validation would give them; the instance equals, dumps and copies like a
        validated one. Model validators do not run, so a caller passes no value such a
        validator would refuse. An unknown or missing required field raises ``TypeError``.

        Where it is used: where validation re-checked a whole conversation on every model
        call, i.e. a run's own request (``AgentRun.request``); the AI service's provider
        request and answer, whose every field it sets, are assembled without even this
        (``nyla.ai.route.assembled``). For a small flat
        model it saves nothing (validation in pydantic-core is as fast). Not
        ``model_construct``: in pydantic 2.14 it reads the signature of every
        ``default_factory`` on every call (~40-180 us an instance)."""
        plan = _FIELD_PLANS.get(cls)
        if plan is None:
            plan = _FIELD_PLANS[cls] = _field_plan(cls)
        template, factories, required = plan
        data = {**template, **values}
        for name, factory in factories:
            if name not in values:
                data[name] = factory()
        if len(data) != len(template) or not required <= values.keys():
            unknown, missing = sorted(values.keys() - template), sorted(required - values.keys())
            raise TypeError(f"{cls.__name__}.trusted: unknown fields {unknown}, missing {missing}")
        instance = cls.__new__(cls)
        _set(instance, "__dict__", data)
        _set(instance, "__pydantic_fields_set__", set(values))
        _set(instance, "__pydantic_extra__", None)
        _set(instance, "__pydantic_private__", None)
        return instance


def copied(model: _M, **update: Any) -> _M:
    """``model.model_copy(update=update)`` (equal to it, the same fields set), built directly:
    pydantic's copy protocol took ~4.6 us for a tool context, this ~2.2. Like ``model_copy``
    it validates nothing, so ``update`` holds values of the fields' types. Used where a copy
    is made per tool call (``AgentRun.tool_context``). A model with private or extra
    attributes is refused (``TypeError``): their copy is not made here."""
    if model.__pydantic_private__ is not None or model.__pydantic_extra__ is not None:
        raise TypeError(f"copied: {type(model).__name__} has private or extra attributes")
    cls = type(model)
    fields = _FIELD_NAMES.get(cls)
    if fields is None:  # (the class attribute goes through pydantic's metaclass)
        fields = _FIELD_NAMES[cls] = frozenset(cls.__pydantic_fields__)
    if not update.keys() <= fields:
        raise TypeError(f"copied: unknown fields {sorted(update.keys() - fields)}")
    instance = _new(cls)
    _set(instance, "__dict__", {**model.__dict__, **update})
    _set(instance, "__pydantic_fields_set__", model.__pydantic_fields_set__ | update.keys())
    _set(instance, "__pydantic_extra__", None)
    _set(instance, "__pydantic_private__", None)
    return instance


def _field_plan(cls: type[WireModel]) -> _Plan:
    """``trusted``'s plan of ``cls``: every field's default in field order (a placeholder
    for the others), the fields filled by a factory, the required ones."""
    if cls.__private_attributes__ or cls.model_config.get("extra") == "allow":
        raise TypeError(f"{cls.__name__}.trusted: a model with private or extra attributes")
    template: dict[str, Any] = {}
    factories: list[tuple[str, Callable[[], Any]]] = []
    required: set[str] = set()
    for name, field in cls.model_fields.items():
        template[name] = field.default
        factory: Callable[[], Any] | None = None
        if field.default_factory is not None:
            if field.default_factory_takes_validated_data:
                raise TypeError(f"{cls.__name__}.trusted: {name}'s default factory takes data")
            factory = cast("Callable[[], Any]", field.default_factory)
        elif isinstance(field.default, list | dict | set):  # (validation copies it)
            factory = functools.partial(copy.deepcopy, field.default)
        if factory is not None:
            factories.append((name, factory))
        elif field.default is PydanticUndefined:
            required.add(name)
    return template, tuple(factories), frozenset(required)


#: the setters of a pydantic model's four slots (called directly: ``object.__setattr__``
#: looks each name up on the model's class, ~0.5k instructions a slot)
_set_dict, _set_fields_set, _set_extra, _set_private = (
    BaseModel.__dict__[name].__set__
    for name in (
        "__dict__",
        "__pydantic_fields_set__",
        "__pydantic_extra__",
        "__pydantic_private__",
    )
)


def assembled(cls: type[_M], values: dict[str, Any], fields_set: set[str] | None = None) -> _M:
    """An instance of ``cls`` holding ``values``, which names every field of ``cls`` in the
    fields' order, *without validation*; ``fields_set`` the fields counted as given (all of
    ``values`` when ``None``). For models built on every model call or tool call from values
    already of the fields' types (checked where they entered): it equals, dumps and copies
    like the validated model, for ~6k instructions where validation costs ~10-30k. Nothing is
    checked here: the callers' tests compare each built model with a validated one."""
    instance = _new(cls)
    _set_dict(instance, values)
    _set_fields_set(instance, set(values) if fields_set is None else fields_set)
    _set_extra(instance, None)
    _set_private(instance, None)
    return instance
