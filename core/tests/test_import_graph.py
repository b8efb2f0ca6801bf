"""The make lint gate of .ci/import_graph.py --check: circles of modules and of rooms, and
imports that run back up a layer unless ALLOWED_UP names them (and only while they exist)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1].parent
SCRIPT = ROOT / ".ci" / "import_graph.py"


def _script():
    spec = importlib.util.spec_from_file_location("import_graph", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _report(graph, *, up=None, room_circles=()):
    allowed = {f"{src} -> {dst}": [f"{src} -> {dst}"] for src, dst in graph.ALLOWED_UP}
    return {
        "circles": [],
        "room_circles": list(room_circles),
        "back_up": allowed if up is None else up,
    }


def test_the_tree_passes_the_check(capsys):
    graph = _script()
    assert graph.check(graph.measure(with_commands=False)) == 0, capsys.readouterr().out


def test_a_circle_of_rooms_fails_the_check(capsys):
    graph = _script()
    assert graph.check(_report(graph, room_circles=[["connections", "knowledge"]])) == 1
    assert "circle of rooms (2): connections -> knowledge" in capsys.readouterr().out


def test_an_import_back_up_fails_unless_allowed_and_a_stale_allowance_fails_too(capsys):
    graph = _script()
    assert graph.check(_report(graph)) == 0
    extra = {"eval (services) -> kernel (runtime)": ["nyla.eval.harness -> nyla.kernel [typing]"]}
    up = {**_report(graph)["back_up"], **extra}
    assert graph.check(_report(graph, up=up)) == 1
    assert "import back up a layer: nyla.eval.harness -> nyla.kernel" in capsys.readouterr().out
    if graph.ALLOWED_UP:  # an allowance whose import went is reported, so the list shrinks
        assert graph.check(_report(graph, up={})) == 1
        assert "no longer runs back up" in capsys.readouterr().out
