"""Paths and URLs a connector builds from item ids and names, confined to where they belong.

The plugin's name for :mod:`nyla.connections.paths`, where the helpers live so that the
vendor HTTP layer checks every request with them without importing the SDK.
"""

from nyla.connections.paths import (
    MAX_ID_CHARS as MAX_ID_CHARS,
)
from nyla.connections.paths import (
    MAX_NAME_BYTES as MAX_NAME_BYTES,
)
from nyla.connections.paths import (
    MAX_PATH_BYTES as MAX_PATH_BYTES,
)
from nyla.connections.paths import (
    check_request_url as check_request_url,
)
from nyla.connections.paths import (
    confine_path as confine_path,
)
from nyla.connections.paths import (
    confine_url as confine_url,
)
from nyla.connections.paths import (
    safe_segment as safe_segment,
)
from nyla.connections.paths import (
    url_path as url_path,
)
from nyla.connections.paths import (
    url_segment as url_segment,
)
