"""The trustee toolbox: ``queryFeatureInstance`` over the trustee feature's data agent.

The tool reaches the feature through the run's services (``ctx.services.features``), never by
importing the feature plugin; the data agent inherits the caller's remaining rounds and budget,
its ``require_neutralization`` and its placeholder session, and its cost is charged to the
caller. The ``trustee`` workflow method (``extractFromFiles``) comes from here too.
"""

from __future__ import annotations

from nyla.sdk import Toolbox, hookimpl
from nyla.sdk.actions import Method
from nyla_toolbox_trustee.actions import trustee_method
from nyla_toolbox_trustee.tool import FEATURE_CODE, query_feature_instance_tool

__all__ = ["nyla_methods", "nyla_toolboxes", "trustee_toolbox"]


def trustee_toolbox() -> Toolbox:
    """The ``trustee`` toolbox (belongs to the trustee feature)."""
    return Toolbox(
        id="trustee",
        label="Trustee accounting",
        description="Ask questions about a trustee (Swiss SME accounting) feature instance.",
        tools=[query_feature_instance_tool()],
        default_active=False,
        feature_code=FEATURE_CODE,
    )


@hookimpl
def nyla_toolboxes() -> list[Toolbox]:
    """The trustee toolbox."""
    return [trustee_toolbox()]


@hookimpl
def nyla_methods() -> list[Method]:
    """The ``trustee`` workflow method."""
    return [trustee_method()]
