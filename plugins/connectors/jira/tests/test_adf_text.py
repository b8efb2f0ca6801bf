"""Every textual node of an Atlassian Document Format body reaches the index (issue 28,
fault 6). Node shapes as the ADF reference documents them
(developer.atlassian.com/cloud/jira/platform/apis/document/nodes/)."""

from __future__ import annotations

from nyla_connector_jira.issues import adf_text


def text(value: str, *marks: dict) -> dict:
    node: dict = {"type": "text", "text": value}
    if marks:
        node["marks"] = list(marks)
    return node


def paragraph(*content: dict) -> dict:
    return {"type": "paragraph", "content": list(content)}


DOC = {
    "version": 1,
    "type": "doc",
    "content": [
        {"type": "heading", "attrs": {"level": 2}, "content": [text("Rollout plan")]},
        paragraph(
            text("See the "),
            text("runbook", {"type": "link", "attrs": {"href": "https://wiki.example.com/run"}}),
            text(" and "),
            {"type": "inlineCard", "attrs": {"url": "https://example.atlassian.net/browse/OPS-7"}},
        ),
        paragraph(
            text("State: "),
            {"type": "status", "attrs": {"text": "In review", "color": "yellow", "localId": "1"}},
            text(" due "),
            {"type": "date", "attrs": {"timestamp": "1798761600000"}},
            text(" owner "),
            {
                "type": "mention",
                "attrs": {"id": "5b10a2844c20165700ede21g", "text": "@Ada Lovelace"},
            },
            {"type": "emoji", "attrs": {"shortName": ":rocket:", "text": "🚀"}},
        ),
        {"type": "blockCard", "attrs": {"url": "https://docs.example.com/design.pdf"}},
        {
            "type": "expand",
            "attrs": {"title": "Rollback steps"},
            "content": [paragraph(text("Revert the flag"))],
        },
        {
            "type": "taskList",
            "attrs": {"localId": "t"},
            "content": [
                {
                    "type": "taskItem",
                    "attrs": {"localId": "a", "state": "DONE"},
                    "content": [text("Backup")],
                },
                {
                    "type": "taskItem",
                    "attrs": {"localId": "b", "state": "TODO"},
                    "content": [text("Deploy")],
                },
            ],
        },
        {
            "type": "table",
            "content": [
                {
                    "type": "tableRow",
                    "content": [
                        {"type": "tableHeader", "content": [paragraph(text("Env"))]},
                        {"type": "tableHeader", "content": [paragraph(text("Window"))]},
                    ],
                },
                {
                    "type": "tableRow",
                    "content": [
                        {"type": "tableCell", "content": [paragraph(text("prod"))]},
                        {"type": "tableCell", "content": [paragraph(text("Sat 02:00"))]},
                    ],
                },
            ],
        },
        {
            "type": "panel",
            "attrs": {"panelType": "warning"},
            "content": [paragraph(text("Freeze"))],
        },
    ],
}


def test_every_textual_node_is_rendered():
    rendered = adf_text(DOC)
    for expected in (
        "Rollout plan",
        "runbook (https://wiki.example.com/run)",
        "https://example.atlassian.net/browse/OPS-7",
        "[In review]",
        "2027-01-01",
        "@Ada Lovelace",
        "🚀",
        "https://docs.example.com/design.pdf",
        "Rollback steps\nRevert the flag",
        "[x] Backup",
        "[ ] Deploy",
        "Env | Window",
        "prod | Sat 02:00",
        "Freeze",
    ):
        assert expected in rendered, (expected, rendered)


def test_odd_shapes_do_not_break_it():
    assert adf_text(None) == ""
    assert adf_text({"type": "date", "attrs": {"timestamp": "not-a-number"}}) == "not-a-number"
    assert adf_text({"type": "inlineCard", "attrs": {"data": {"url": "https://x.example"}}}) == (
        "https://x.example"
    )
    assert adf_text({"type": "paragraph", "content": [None, text("a")]}) == "a\n"
