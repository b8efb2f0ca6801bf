"""What a plugin needs to contribute workflow methods and typed actions (``nyla_methods``):
the method and action contracts, the parameter base class and the reference types."""

from __future__ import annotations

from nyla.models.actions import (
    REFERENCE_KINDS,
    Action,
    ActionHandler,
    ActionParams,
    ActionResult,
    DocumentList,
    FeatureInstanceId,
    FeatureInstanceRef,
    FileId,
    FileRef,
    Method,
    ObjectRef,
    Reference,
)

__all__ = [
    "REFERENCE_KINDS",
    "Action",
    "ActionHandler",
    "ActionParams",
    "ActionResult",
    "DocumentList",
    "FeatureInstanceId",
    "FeatureInstanceRef",
    "FileId",
    "FileRef",
    "Method",
    "ObjectRef",
    "Reference",
]
