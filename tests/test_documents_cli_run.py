"""The documents toolbox in ``nyla run`` (issue 33: exercised in an agent run through the
CLI): a scripted model behind plugin discovery draws a chart, renders it into a DOCX and a
PPTX, and browses the DOCX it made; the run's JSON events show each tool succeed and the
files are the run user's."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from nyla.cli import cli
from nyla.models.ai import ChatResponse, Role, ToolCall
from nyla.plugins import PluginHost
from nyla.testing.scripted import ScriptedPlugin, ScriptedProvider

pytestmark = pytest.mark.db

CHART = {"kind": "line", "labels": ["Jan", "Feb"], "series": [{"values": [1, 3]}]}


def _ids(result: str) -> list[str]:
    return re.findall(r"file id: (\S+)", result)


def script(request, index):
    results = [m for m in request.messages if m.role is Role.TOOL]
    if not results:
        return ChatResponse(
            tool_calls=[ToolCall(id="c", name="createChart", arguments=json.dumps(CHART))]
        )
    if len(results) == 1:
        png = _ids(results[0].text)[0]
        markdown = f"# Trend\n\nIt rises.\n\n![trend](file:{png})\n"
        args = {"markdown": markdown, "formats": ["docx", "pptx"], "name": "trend"}
        return ChatResponse(
            tool_calls=[ToolCall(id="r", name="renderDocument", arguments=json.dumps(args))]
        )
    if len(results) == 2:
        docx = _ids(results[1].text)[0]
        return ChatResponse(
            tool_calls=[
                ToolCall(id="b", name="browseContainer", arguments=json.dumps({"fileId": docx}))
            ]
        )
    return "counts: " + json.dumps(json.loads(results[-1].text)["counts"], sort_keys=True)


def test_nyla_run_charts_renders_and_browses(monkeypatch, tmp_path, cli_database):
    import nyla_toolbox_documents

    monkeypatch.setenv("NYLA_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("NYLA_DATABASE_URL", cli_database)
    monkeypatch.setenv("NYLA_USER", "rita")
    from nyla import config

    config.reload()
    plugins = [nyla_toolbox_documents, ScriptedPlugin(ScriptedProvider(script))]
    monkeypatch.setattr(
        PluginHost,
        "discover",
        classmethod(
            lambda cls, **kw: cls.from_plugins(
                plugins, builtins=True, names=["documents", "scripted"]
            )
        ),
    )
    done = CliRunner().invoke(
        cli, ["run", "Chart the trend into a report", "--json", "--model", "scripted:model"]
    )
    assert done.exit_code == 0, done.output
    events = [json.loads(line) for line in done.output.splitlines() if line.startswith("{")]
    results = [e["data"] for e in events if e["type"] == "TOOL_RESULT"]
    assert [(r["toolName"], r["success"]) for r in results] == [
        ("createChart", True),
        ("renderDocument", True),
        ("browseContainer", True),
    ]
    final = next(e for e in events if e["type"] == "FINAL")["text"]
    assert final == 'counts: {"heading": 1, "image": 1, "text": 1}'
