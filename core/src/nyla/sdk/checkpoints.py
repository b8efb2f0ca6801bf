"""Typed sync checkpoints: each connector owns a model of where its sync resumes, validated
on every load. The runner stores the checkpoint as JSON (``SyncPage.checkpoint``, a dict);
:meth:`Checkpoint.load` turns it back into the model and :meth:`Checkpoint.dump` into the
dict. A stored checkpoint that does not validate (an older nyla's, a broken one, another
connector's) never fails the sync: it loads as :meth:`Checkpoint.fresh`, which starts over
with a full listing."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, Self

from pydantic import BaseModel, ConfigDict, PlainSerializer, ValidationError

#: a time kept in a checkpoint: ISO 8601 with its offset, as ``datetime.isoformat`` writes it
#: (older checkpoints hold exactly that; integers are read as Unix time)
Stamp = Annotated[datetime, PlainSerializer(datetime.isoformat, return_type=str, when_used="json")]


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
        return self.model_dump(mode="json", by_alias=True)


class DeltaCheckpoint(Checkpoint):
    """Where a delta feed resumes: the vendor's cursor (a next or delta link, a continue
    cursor, a sync token; empty: from the start) and whether the run under way lists
    everything. A subclass keeps its stored key by aliasing ``cursor``:
    ``cursor: str | None = Field(None, validation_alias="link", serialization_alias="link")``.
    """

    model_config = ConfigDict(validate_by_name=True)

    cursor: str | None = None
    full: bool = False

    @property
    def listing_all(self) -> bool:
        """The run lists everything (no cursor yet, or a full listing under way)."""
        return not self.cursor or self.full

    def then(self, cursor: str | None, more: bool) -> Self:
        """The checkpoint after a page that answered ``cursor``; ``more``: pages follow."""
        return self.model_copy(update={"cursor": cursor, "full": more and self.listing_all})


class SinceCheckpoint(Checkpoint):
    """Where a sync by "updated since" resumes, for a vendor with no change feed (Jira,
    ClickUp): after a completed run only ``since``, the newest change it saw; while a run
    pages, its lower ``bound`` (``None``: everything), whether it lists in ``full``, and the
    newest change ``seen`` so far."""

    since: Stamp | None = None
    full: bool = False
    bound: Stamp | None = None
    seen: Stamp | None = None

    @property
    def start(self) -> datetime | None:
        """The lower bound of the run (``None``: list everything)."""
        return self.bound or self.since

    @property
    def newest(self) -> datetime | None:
        """The newest change seen so far (by this run or the last completed one)."""
        return self.seen or self.since

    @property
    def listing_all(self) -> bool:
        """The run lists every item: a first run, or a full listing under way."""
        return self.full or self.start is None
