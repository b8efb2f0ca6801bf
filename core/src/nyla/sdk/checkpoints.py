"""Typed sync checkpoints: each connector owns a model of where its sync resumes, validated
on every load. The runner stores the checkpoint as JSON (``SyncPage.checkpoint``, a dict);
:meth:`Checkpoint.load` turns it back into the model and :meth:`Checkpoint.dump` into the
dict. A stored checkpoint that does not validate (an older nyla's, a broken one, another
connector's) never fails the sync: it loads as :meth:`Checkpoint.fresh`, which starts over
with a full listing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, ValidationError


class Checkpoint(BaseModel):
    """Base of a connector-owned checkpoint model.

    A subclass's defaults must describe "start over in full" (:meth:`fresh`). Keys the model
    does not know are ignored, not refused: the stored dict may carry what a newer nyla
    wrote, and refusing it would throw away a valid cursor for a full relisting of the whole
    source; a key whose *value* has the wrong type still refuses the checkpoint.
    """

    model_config = ConfigDict(extra="ignore")

    #: the scope the checkpoint was taken on (``None``: not recorded, as in older nyla)
    scope: str | None = None

    @classmethod
    def fresh(cls) -> Self:
        """The checkpoint of a run that starts over and lists everything."""
        return cls()

    @classmethod
    def load(cls, data: Mapping[str, Any] | None, scope: str | None = None) -> Self:
        """The stored ``data`` as this model; :meth:`fresh` for nothing, for data that does
        not validate, or for a checkpoint recorded on a scope other than ``scope``."""
        if not data:
            return cls.fresh()
        try:
            loaded = cls.model_validate(data)
        except ValidationError:
            return cls.fresh()
        if scope is not None and loaded.scope not in (None, scope):
            return cls.fresh()  # another scope's cursor says nothing about this one
        if scope is not None:
            loaded.scope = scope
        return loaded

    def dump(self) -> dict[str, Any]:
        """The checkpoint as the JSON-ready dict a :class:`SyncPage` carries."""
        return self.model_dump(mode="json")
