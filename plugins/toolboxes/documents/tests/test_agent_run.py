"""An agent run with a scripted model: it draws a chart, renders a report embedding it as
PDF and DOCX, browses the PDF and reads its table back. The produced files are chat
documents of the run's conversation, labelled by the tool that made them."""

from __future__ import annotations

import json
import re

from nyla.sdk import AgentConfig, ChatResponse, Role, RunContext, ToolCall
from nyla.testing import plugin_kernel
from nyla.testing.scripted import ScriptedProvider

from .conftest import USER

CHART = {
    "kind": "bar",
    "labels": ["North", "South"],
    "series": [{"name": "Revenue", "values": [120, 95]}],
    "title": "Revenue",
    "width": 400,
    "height": 300,
    "formats": ["png"],
}
REPORT = """# Revenue report

| Region | Revenue |
|---|---|
| North | 120 |
| South | 95 |

![Revenue chart](file:{chart})
"""


def _file_ids(text: str) -> list[str]:
    return re.findall(r"file id: (\S+)", text)


def _script(request, index):
    results = [m for m in request.messages if m.role is Role.TOOL]
    if not results:
        return ChatResponse(
            tool_calls=[ToolCall(id="c1", name="createChart", arguments=json.dumps(CHART))]
        )
    if len(results) == 1:
        chart = _file_ids(results[0].text)[0]
        args = {
            "markdown": REPORT.format(chart=chart),
            "formats": ["pdf", "docx"],
            "name": "revenue",
        }
        return ChatResponse(
            tool_calls=[ToolCall(id="r1", name="renderDocument", arguments=json.dumps(args))]
        )
    if len(results) == 2:
        pdf = _file_ids(results[1].text)[0]
        return ChatResponse(
            tool_calls=[
                ToolCall(id="b1", name="browseContainer", arguments=json.dumps({"fileId": pdf})),
                ToolCall(
                    id="t1",
                    name="readContentObjects",
                    arguments=json.dumps({"fileId": pdf, "refs": ["table 1"]}),
                ),
            ]
        )
    return "Done: " + results[-1].text.splitlines()[2]


async def test_a_scripted_run_makes_a_chart_a_report_and_reads_it_back(db, run_events, only):
    import nyla_toolbox_documents

    provider = ScriptedProvider(_script, id="scripted", model="m")
    kernel = plugin_kernel(nyla_toolbox_documents, provider, db=db, builtins=True)
    context = RunContext(user_id=USER, workflow_id="wf-docs")
    config = AgentConfig(model="scripted:m", max_rounds=6, max_cost_chf=1.0)
    events = await run_events(kernel.agent.run("Make me a revenue report.", config, context))
    results = [e for e in events if e.type == "TOOL_RESULT"]
    assert [(e.data["toolName"], e.data["success"]) for e in results] == [
        ("createChart", True),
        ("renderDocument", True),
        ("browseContainer", True),
        ("readContentObjects", True),
    ]
    final = next(e for e in events if e.type == "FINAL")
    assert final.text == "Done: | North | 120 |"
    workflow = await kernel.files.workflows.load("wf-docs", context)
    labels = sorted(
        m.documents_label.split(":")[0] + ":" + m.documents_label.split(":")[1]
        for m in workflow.messages
        if m.documents_label
    )
    assert labels == ["createChart:chart", "renderDocument:revenue", "renderDocument:revenue"]
    names = sorted(d.file_name for d in workflow.documents())
    assert names == ["chart.png", "revenue.docx", "revenue.pdf"]
