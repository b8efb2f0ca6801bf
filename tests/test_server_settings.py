"""Every installed connector whose settings name a folder on the server or a URL the server
will fetch declares them as ``server_settings`` (a multi-user host takes those only from a
sysadmin). Checked over whatever is installed, so a new connector is covered the day it ships."""

from __future__ import annotations

import re

from nyla import PluginHost

#: setting names that point somewhere: a folder or a URL
POINTING = re.compile(r"(^root$|^path$|^folder$|^dir(ectory)?$|url$|uri$|^host$|endpoint$)", re.I)

#: settings that only build links shown to the user (never fetched by the server)
LINKS_ONLY = {("jira", "siteUrl")}


def test_settings_that_point_somewhere_are_server_settings():
    host = PluginHost.discover(builtins=True, strict=False)
    assert {"localfs", "webdav", "jira", "infomaniak"} <= set(host.connectors)
    missing = {
        service: sorted(
            name
            for name in getattr(connector, "settings_help", {})
            if POINTING.search(name)
            and name not in connector.server_settings
            and (service, name) not in LINKS_ONLY
        )
        for service, connector in host.connectors.items()
    }
    assert {s: names for s, names in missing.items() if names} == {}
    assert host.connectors["localfs"].server_settings == {"root"}
    assert host.connectors["webdav"].server_settings == {"baseUrl"}
