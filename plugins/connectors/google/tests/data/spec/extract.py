"""Cut ``gmail-v1.json``, ``drive-v3.json``, ``calendar-v3.json`` and ``people-v1.json`` (the
methods nyla calls) out of Google's discovery documents.

Google serves each API's discovery document at
``https://<api>.googleapis.com/$discovery/rest?version=<v>``; the copies used are the ones
Google ships in its Python client (``googleapiclient/discovery_cache/documents/`` of the
``google-api-python-client`` distribution, repository googleapis/google-api-python-client),
named in ``SOURCE`` with their tag and SHA-256. To refresh, fetch the documents and run::

    python extract.py <folder holding gmail.v1.json, drive.v3.json, ...> [package version]
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from nyla.testing.spec_discovery import discovery_subset
from nyla.testing.spec_extract import write_spec

PACKAGE = "google-api-python-client"
VERSION = "2.202.0"

#: API file -> (methods nyla calls, documentation page of a method, host)
APIS = {
    "gmail.v1": (
        [
            "gmail.users.getProfile",
            "gmail.users.history.list",
            "gmail.users.labels.list",
            "gmail.users.messages.list",
            "gmail.users.messages.get",
            "gmail.users.messages.attachments.get",
            "gmail.users.messages.send",
            "gmail.users.messages.modify",
            "gmail.users.threads.list",
            "gmail.users.threads.get",
            "gmail.users.drafts.create",
            "gmail.users.drafts.send",
        ],
        "https://developers.google.com/gmail/api/reference/rest/v1/{resource}/{method}",
        "gmail.googleapis.com",
    ),
    "drive.v3": (
        [
            "drive.about.get",
            "drive.drives.list",
            "drive.changes.getStartPageToken",
            "drive.changes.list",
            "drive.files.list",
            "drive.files.get",
            "drive.files.export",
        ],
        "https://developers.google.com/drive/api/reference/rest/v3/{resource}/{method}",
        "www.googleapis.com",
    ),
    "calendar.v3": (
        ["calendar.calendarList.list", "calendar.events.list", "calendar.events.get"],
        "https://developers.google.com/calendar/api/v3/reference/{resource}/{method}",
        "www.googleapis.com",
    ),
    "people.v1": (
        [
            "people.people.connections.list",
            "people.people.searchContacts",
            "people.people.get",
        ],
        "https://developers.google.com/people/api/rest/v1/{resource}/{method}",
        "people.googleapis.com",
    ),
}

#: Google's JSON error answer, the same for every method and API
#: (https://cloud.google.com/apis/design/errors#http_mapping; the ``errors`` list as
#: https://developers.google.com/gmail/api/guides/handle-errors and
#: https://developers.google.com/drive/api/guides/handle-errors show it)
ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "integer"},
                "message": {"type": "string"},
                "status": {"type": "string"},
                "details": {"type": "array"},
                "errors": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            name: {"type": "string"}
                            for name in (
                                "domain",
                                "reason",
                                "message",
                                "location",
                                "locationType",
                                "extendedHelp",
                                "sendReport",
                            )
                        },
                    },
                },
            },
        }
    },
}
#: statuses the error pages above name for these APIs (429 and 403 rate limits, 410 for a
#: sync token gone: https://developers.google.com/calendar/api/guides/sync)
STATUSES = [400, 401, 403, 404, 409, 410, 412, 429, 500, 502, 503]


def main(argv: list[str]) -> None:
    """Write the four subsets beside this script."""
    folder = Path(argv[1])
    version = argv[2] if len(argv) > 2 else VERSION
    for name, (methods, docs_url, host) in APIS.items():
        raw = (folder / f"{name}.json").read_bytes()
        source = {
            "package": f"{PACKAGE}=={version}",
            "repository": "googleapis/google-api-python-client",
            "path": f"googleapiclient/discovery_cache/documents/{name}.json",
            "tag": f"v{version}",
            "sha256": hashlib.sha256(raw).hexdigest(),
        }
        vendor = {
            "errors": {"statuses": STATUSES, "schema": ERROR},
            "hosts": [host],
            "projection": "google-fields",
        }
        spec = discovery_subset(
            json.loads(raw), methods, source=source, vendor=vendor, docs_url=docs_url
        )
        write_spec(Path(__file__).with_name(f"{name.replace('.', '-')}.json"), spec)


if __name__ == "__main__":
    main(sys.argv)
