"""The tolerant document-reference parser (seed 003: ``coerceDocumentReferenceList``).

Models put document references into a ``documentList`` argument in many shapes. Four are
accepted and normalized to a list of :class:`DocumentReference`:

- ``["docItem:<id>", "docItem:<id2>"]`` (canonical; ``docList:<label>`` entries too),
- ``[{"id": "<id>", "name": "..."}]`` (list of objects),
- ``{"documents": [{"id": "<id>"}, ...]}`` (object wrapper),
- ``"docItem:<id>"`` (a single string).

Anything else raises :class:`DocumentReferenceError` saying which shapes are accepted.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

ACCEPTED_SHAPES = (
    '["docItem:<id>", ...], [{"id": "<id>"}, ...], {"documents": [{"id": "<id>"}, ...]} '
    'or "docItem:<id>"'
)


class DocumentReferenceError(ValueError):
    """A document reference list in a shape the parser does not accept."""


class DocumentReference(BaseModel):
    """One reference: a chat document by id (``docItem``) or all documents of a message
    label (``docList``)."""

    kind: Literal["docItem", "docList"]
    value: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.value}"


def _from_string(text: str) -> DocumentReference:
    text = text.strip()
    for kind in ("docItem", "docList"):
        prefix = f"{kind}:"
        if text.startswith(prefix) and text[len(prefix) :].strip():
            return DocumentReference(kind=kind, value=text[len(prefix) :].strip())
    raise DocumentReferenceError(
        f"invalid document reference {text[:80]!r}: expected 'docItem:<id>' or "
        f"'docList:<label>'; accepted shapes: {ACCEPTED_SHAPES}"
    )


def _from_object(obj: dict[str, Any]) -> DocumentReference:
    ident = obj.get("id") or obj.get("documentId")
    if not isinstance(ident, str) or not ident.strip():
        raise DocumentReferenceError(
            f"a document object needs a string 'id', got keys {sorted(obj)}; "
            f"accepted shapes: {ACCEPTED_SHAPES}"
        )
    if ident.startswith(("docItem:", "docList:")):
        return _from_string(ident)
    return DocumentReference(kind="docItem", value=ident.strip())


def coerce_document_reference_list(value: Any) -> list[DocumentReference]:
    """Normalize one of the four accepted shapes (see module doc) to references."""
    if isinstance(value, str):
        return [_from_string(value)]
    if isinstance(value, dict):
        docs = value.get("documents")
        if not isinstance(docs, list):
            raise DocumentReferenceError(
                f"an object document list needs a 'documents' array, got keys "
                f"{sorted(value)}; accepted shapes: {ACCEPTED_SHAPES}"
            )
        value = docs
    if isinstance(value, list):
        refs = []
        for item in value:
            if isinstance(item, str):
                refs.append(_from_string(item))
            elif isinstance(item, dict):
                refs.append(_from_object(item))
            else:
                raise DocumentReferenceError(
                    f"invalid entry of type {type(item).__name__} in the document list; "
                    f"accepted shapes: {ACCEPTED_SHAPES}"
                )
        return refs
    raise DocumentReferenceError(
        f"invalid document list type {type(value).__name__}; accepted shapes: {ACCEPTED_SHAPES}"
    )
