"""Every installed connector whose settings name a folder on the server or a URL the server
will fetch declares them ``server_only`` in its settings model (a multi-user host takes those
only from a sysadmin). Checked over whatever is installed, so a new connector is covered the
day it ships."""

from __future__ import annotations

import re

from nyla.host import PluginHost
from nyla.sdk.connectors import describe_connector

#: setting names that point somewhere: a folder or a URL
POINTING = re.compile(r"(^root$|^path$|^folder$|^dir(ectory)?$|url$|uri$|^host$|endpoint$)", re.I)

#: settings that only build links shown to the user (never fetched by the server)
LINKS_ONLY = {("jira", "siteUrl")}


def test_settings_that_point_somewhere_are_server_only():
    host = PluginHost.discover(builtins=True, strict=False)
    assert {"localfs", "webdav", "jira", "infomaniak"} <= set(host.connectors)
    missing = {}
    for service, connector in host.connectors.items():
        fields = describe_connector(connector)["fields"]
        missing[service] = sorted(
            f["key"]
            for f in fields
            if (POINTING.search(f["key"]) or f["kind"] in ("folder", "url"))
            and not f["serverOnly"]
            and (service, f["key"]) not in LINKS_ONLY
        )
    assert {s: names for s, names in missing.items() if names} == {}
    only = {
        s: {f["key"] for f in describe_connector(c)["fields"] if f["serverOnly"]}
        for s, c in host.connectors.items()
    }
    assert only["localfs"] == {"root"}
    assert only["webdav"] == {"baseUrl"}


def test_every_connector_says_how_it_signs_in_and_what_it_needs():
    host = PluginHost.discover(builtins=True, strict=False)
    described = {s: describe_connector(c) for s, c in host.connectors.items()}
    auth = {s: d["auth"] for s, d in described.items()}
    assert auth["localfs"] == "none"
    assert auth["msft"] == auth["google"] == auth["jira"] == "oauth"
    assert auth["clickup"] == auth["infomaniak"] == "token"
    assert described["msft"]["label"] == "Microsoft 365" and described["msft"]["adminConsent"]
    root = next(f for f in described["localfs"]["fields"] if f["key"] == "root")
    assert (root["kind"], root["required"], root["label"]) == ("folder", True, "Folder")
    schema = described["localfs"]["settingsSchema"]
    assert schema["required"] == ["root"] and schema["additionalProperties"] is False
    for service, d in described.items():
        assert d["label"] and d["label"] != service, service
