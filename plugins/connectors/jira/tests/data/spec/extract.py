"""Cut ``jira-v3.json`` (the operations nyla calls) out of Jira Cloud's OpenAPI document.

Atlassian publishes the Jira Cloud platform REST API v3 description at
https://dac-static.atlassian.com/cloud/jira/platform/swagger-v3.v3.json (the reference at
https://developer.atlassian.com/cloud/jira/platform/rest/v3/ is built from it). The copy used
is the one kept in the public repository named in ``SOURCE``; to refresh, fetch the document
and run::

    python extract.py swagger-v3.v3.json [repository path commit]
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from nyla.testing.spec_extract import openapi_subset, write_spec

SOURCE = {
    "url": "https://dac-static.atlassian.com/cloud/jira/platform/swagger-v3.v3.json",
    "repository": "jarekbird/jira-api-mcp-wrapper",
    "path": "swagger-v3.v3.json",
    "commit": "fea6054694f99860c85887a64b9f169fec71ed18",
}

API = "/rest/api/3"
OPERATIONS = [
    ("GET", f"{API}/search/jql"),
    # deprecated and since removed (410, see VENDOR): the fake answers it so a test can
    # prove nyla never calls it
    ("GET", f"{API}/search"),
    ("GET", f"{API}/myself"),
    ("GET", f"{API}/project/search"),
    ("GET", f"{API}/user/search"),
    ("GET", f"{API}/attachment/{{id}}"),
    ("GET", f"{API}/attachment/content/{{id}}"),
    ("POST", f"{API}/issue"),
    ("GET", f"{API}/issue/{{issueIdOrKey}}"),
    ("PUT", f"{API}/issue/{{issueIdOrKey}}"),
    ("GET", f"{API}/issue/{{issueIdOrKey}}/comment"),
    ("POST", f"{API}/issue/{{issueIdOrKey}}/comment"),
    ("GET", f"{API}/issue/{{issueIdOrKey}}/transitions"),
    ("POST", f"{API}/issue/{{issueIdOrKey}}/transitions"),
]

#: Jira answers errors as an ErrorCollection whatever the operation
#: (https://developer.atlassian.com/cloud/jira/platform/rest/v3/intro/#status-codes), 429
#: when rate limited (https://developer.atlassian.com/cloud/jira/platform/rate-limiting/) and
#: 410 for the removed /search (https://developer.atlassian.com/changelog/#CHANGE-2046).
#: Apps reach a site through api.atlassian.com/ex/jira/<cloudId> (OAuth 2.0 3LO:
#: https://developer.atlassian.com/cloud/jira/platform/oauth-2-3lo-apps/), whose gateway
#: answers a token it refuses with {"code": 401, "message": ...}
#: (https://support.atlassian.com/jira/kb/oauth-app-throwing-error-unauthorized-scope-does-not-match).
VENDOR = {
    "errors": {
        "statuses": [400, 401, 403, 404, 410, 429, 500, 503],
        "docs": "https://developer.atlassian.com/cloud/jira/platform/rest/v3/intro/#status-codes",
        "schema": {
            "anyOf": [
                {"$ref": "#/components/schemas/ErrorCollection"},
                {
                    "type": "object",
                    "properties": {"code": {"type": "integer"}, "message": {"type": "string"}},
                    "required": ["code", "message"],
                },
            ]
        },
    },
    "hosts": ["api.atlassian.com", "*.atlassian.net"],
    "projection": "jira-fields",
}


def docs(method: str, path: str, op: dict[str, Any]) -> str:
    """The reference page (and anchor) of an operation."""
    group = re.sub(r"\W+", "-", op["tags"][0].lower())
    anchor = re.sub(r"[{}]", "", path.strip("/")).replace("/", "-")
    return (
        "https://developer.atlassian.com/cloud/jira/platform/rest/v3/"
        f"api-group-{group}/#api-{anchor}-{method.lower()}"
    )


def main(argv: list[str]) -> None:
    """Write the subset beside this script."""
    doc = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    source = dict(SOURCE)
    if len(argv) == 5:
        source.update(repository=argv[2], path=argv[3], commit=argv[4])
    spec = openapi_subset(doc, OPERATIONS, source=source, docs=docs, vendor=VENDOR)
    write_spec(Path(__file__).with_name("jira-v3.json"), spec)


if __name__ == "__main__":
    main(sys.argv)
