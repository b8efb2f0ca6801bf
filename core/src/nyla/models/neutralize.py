"""Contract of neutralizers: detectors of personal data, run by the AI service's gate."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from nyla.models.base import WireModel


class Finding(WireModel):
    """A span of personal data: ``text[start:end] == value``, of ``category`` (``EMAIL``,
    ``PHONE``, ``IBAN``, ``CARD``, ``AHV``, ``IP``, ``NAME``, ...)."""

    start: int
    end: int
    category: str
    value: str


@runtime_checkable
class Neutralizer(Protocol):
    """Detects personal data in text, contributed through ``nyla_neutralizers``.

    A neutralizer only finds; the gate in the AI service merges all findings, resolves
    overlaps and replaces them with placeholders that stay stable within a run
    (``[EMAIL_1]``), keeping the mapping on the run so it never reaches a model.
    """

    id: str

    def find(self, text: str) -> list[Finding]: ...
