"""The trustee plugin contributes its workflow method and no tool of its own: the kernel's
``queryFeatureInstance`` (the ``featureData`` toolbox) serves trustee instances."""

from __future__ import annotations

import nyla_toolbox_trustee


def test_the_plugin_contributes_the_method_and_leaves_the_query_tool_to_the_kernel(make_host):
    host = make_host(nyla_toolbox_trustee, builtins=True)
    assert "trustee" in host.methods
    owners = [tb.id for tb in host.toolboxes.values() for t in tb.tools]
    tools = [t.name for tb in host.toolboxes.values() for t in tb.tools]
    assert tools.count("queryFeatureInstance") == 1
    assert owners[tools.index("queryFeatureInstance")] == "featureData"
