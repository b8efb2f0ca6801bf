"""The trustee plugin's workflow method: ``trustee.extractFromFiles`` (booking candidates
from receipts and statements).

Questions about a trustee instance's data are answered by the kernel's own
``queryFeatureInstance`` (the ``featureData`` toolbox), which runs the data agent of any
installed feature with an ontology — the trustee feature's included — so this plugin no longer
carries a tool of its own for it.
"""

from __future__ import annotations

from nyla.sdk import hookimpl
from nyla.sdk.actions import Method
from nyla_toolbox_trustee.actions import FEATURE_CODE, trustee_method

__all__ = ["FEATURE_CODE", "nyla_methods"]


@hookimpl
def nyla_methods() -> list[Method]:
    """The ``trustee`` workflow method."""
    return [trustee_method()]
