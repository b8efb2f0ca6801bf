"""Cut ``clickup-v2.json`` (the operations nyla calls) out of ClickUp's OpenAPI document.

ClickUp publishes its API v2 description at
https://developer.clickup.com/openapi/clickup-api-v2-reference.json (announced on
https://developer.clickup.com/docs/open-api-spec). The copy used is the one kept in the public
repository named in ``SOURCE``; to refresh, fetch the document and run::

    python extract.py clickup-api-v2-reference.json [repository path commit]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from nyla.testing.spec_extract import openapi_subset, write_spec

SOURCE = {
    "url": "https://developer.clickup.com/openapi/clickup-api-v2-reference.json",
    "repository": "Npab19/clickup-mcp",
    "path": "clickup-api-v2-reference.json",
    "commit": "a1acefb67d67d5909d46f833abd3d71e6a273294",
}

OPERATIONS = [
    ("GET", "/v2/user"),
    ("GET", "/v2/team"),
    ("GET", "/v2/team/{team_id}/space"),
    ("GET", "/v2/space/{space_id}/folder"),
    ("GET", "/v2/folder/{folder_id}/list"),
    ("GET", "/v2/space/{space_id}/list"),
    ("GET", "/v2/team/{team_Id}/task"),
    ("GET", "/v2/list/{list_id}/task"),
    ("POST", "/v2/list/{list_id}/task"),
    ("GET", "/v2/task/{task_id}"),
    ("PUT", "/v2/task/{task_id}"),
    ("GET", "/v2/task/{task_id}/comment"),
    ("POST", "/v2/task/{task_id}/comment"),
]

#: ClickUp answers errors as {"err": ..., "ECODE": ...} whatever the operation
#: (https://developer.clickup.com/docs/common_errors), throttles with 429
#: (https://developer.clickup.com/docs/rate-limits) and answers 401 to a bad token
VENDOR = {
    "errors": {
        "statuses": [400, 401, 403, 404, 429, 500, 502, 503],
        "docs": "https://developer.clickup.com/docs/common_errors",
        "schema": {
            "type": "object",
            "properties": {"err": {"type": "string"}, "ECODE": {"type": "string"}},
            "required": ["err", "ECODE"],
        },
    },
    "hosts": ["api.clickup.com"],
}


def _at(path: str, method: str = "get") -> str:
    """The pointer of an operation's 200 answer schema."""
    escaped = path.replace("/", "~1")
    return f"/paths/{escaped}/{method}/responses/200/content/application~1json/schema"


_GET_TASK = "#" + _at("/v2/task/{task_id}")
#: where the document contradicts itself (each reason names the page that shows it)
CORRECTIONS = [
    *(
        {
            "at": f"{where}/properties/{name}/items",
            "set": {"$ref": f"{_GET_TASK}/properties/{name}/items"},
            "why": f"this schema types a task's {name} as strings; Get Task "
            "(https://developer.clickup.com/reference/gettask) types them, and shows them, as "
            "objects",
        }
        for where in (
            _at("/v2/list/{list_id}/task") + "/properties/tasks/items",
            _at("/v2/list/{list_id}/task", "post"),
            _at("/v2/task/{task_id}", "put"),
        )
        for name in ("assignees", "watchers", "tags")
    ),
    {
        "at": _at("/v2/team/{team_Id}/task") + "/properties/tasks/items",
        "set": {"$ref": "#" + _at("/v2/list/{list_id}/task") + "/properties/tasks/items"},
        "why": "Get Filtered Team Tasks lists the same task objects as Get Tasks, but its task "
        "schema lacks fields its own page names (custom_item_id: 'Each task's custom_fields "
        "array only includes Custom Fields applicable to that task's custom_item_id', "
        "https://developer.clickup.com/reference/getfilteredteamtasks) and types date_closed, "
        "due_date and parent as strings that are null on open tasks (Get Tasks allows null)",
    },
]


def docs(method: str, path: str, op: dict[str, Any]) -> str:
    """ClickUp's reference page of an operation."""
    return f"https://developer.clickup.com/reference/{op['operationId'].lower()}"


def main(argv: list[str]) -> None:
    """Write the subset beside this script."""
    doc = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    source = dict(SOURCE)
    if len(argv) == 5:
        source.update(repository=argv[2], path=argv[3], commit=argv[4])
    spec = openapi_subset(
        doc, OPERATIONS, source=source, docs=docs, vendor=VENDOR, corrections=CORRECTIONS
    )
    write_spec(Path(__file__).with_name("clickup-v2.json"), spec)


if __name__ == "__main__":
    main(sys.argv)
