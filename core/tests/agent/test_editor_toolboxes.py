"""A feature that declares the graphical workflow editor gets the ``workflow`` toolbox in its
runs from the start; any other run does not (it may still request it)."""

from __future__ import annotations

from typing import Any

import pytest

from nyla.agent.toolboxes import initial_toolboxes
from nyla.hookspecs import hookimpl
from nyla.kernel import Kernel
from nyla.models.agent import AgentConfig, RunContext
from nyla.models.feature import declares_graphical_editor
from nyla.models.tools import Toolbox
from nyla.plugins import PluginHost


class Plain:
    """A feature with no tables; ``graphical_editor`` set per subclass."""

    code = "plain"
    label = "Plain"

    def tables(self) -> list[Any]:
        return []

    def data_provider(self) -> Any:
        return None

    def get_agent_ontology(self) -> None:
        return None

    def get_agent_domain_hints(self) -> str:
        return ""

    def benchmark_questions(self) -> list[Any]:
        return []


class Studio(Plain):
    code = "studio"
    graphical_editor = True


class Vague(Plain):
    code = "vague"
    graphical_editor = "yes"  # not True: no declaration


class Features:
    @hookimpl
    def nyla_features(self) -> list[Any]:
        return [Plain(), Studio(), Vague()]


def active(kernel: Kernel, feature_code: str | None) -> list[str]:
    context = RunContext(feature_code=feature_code, feature_instance_id="i-1")
    return kernel.agent.toolbox_session(AgentConfig(), context).active


def test_only_a_feature_declaring_the_editor_switches_the_workflow_toolbox_on():
    kernel = Kernel(plugins=PluginHost.from_plugins([Features()], builtins=True))
    assert "workflow" in active(kernel, "studio")
    for code in ("plain", "vague", "unknown", None):
        assert "workflow" not in active(kernel, code), code
    session = kernel.agent.toolbox_session(AgentConfig(), RunContext(feature_code="plain"))
    assert "workflow" in session.inactive  # still requestable
    tools = {
        t.name
        for t in kernel.agent.toolbox_session(
            AgentConfig(), RunContext(feature_code="studio")
        ).tools
    }
    assert {"readWorkflowGraph", "addNode", "validateWorkflow"} <= tools


def test_the_flag_is_read_strictly_and_only_marked_toolboxes_follow_it():
    assert declares_graphical_editor(Studio()) and not declares_graphical_editor(Vague())
    assert not declares_graphical_editor(Plain()) and not declares_graphical_editor(None)
    boxes = {
        "editor": Toolbox(id="editor", graphical_editor=True),
        "other": Toolbox(id="other"),
    }
    assert initial_toolboxes(boxes, AgentConfig(), RunContext(), graphical_editor=True) == [
        "editor"
    ]
    assert initial_toolboxes(boxes, AgentConfig(), RunContext()) == []


def test_trustee_declares_the_editor():
    trustee = pytest.importorskip("nyla_feature_trustee")
    kernel = Kernel(plugins=PluginHost.from_plugins([trustee], builtins=True, names=["trustee"]))
    assert "workflow" in active(kernel, "trustee")
