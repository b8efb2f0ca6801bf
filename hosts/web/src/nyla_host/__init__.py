"""nyla-host: ``nyla serve`` — the REST API, streamed agent runs (SSE), authentication and
roles, and the web page.

A host app can serve nyla inside its own FastAPI app::

    from nyla_host import build_state, mount, startup, shutdown
    state = build_state(kernel, auth_hooks=[my_hook])
    mount(app, state)  # and call startup(state) / shutdown(state) in the app's lifespan

Names are imported lazily, so loading the plugin (for ``nyla --help``) imports no web stack.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    "build_state": "nyla_host.app",
    "create_app": "nyla_host.app",
    "mount": "nyla_host.app",
    "shutdown": "nyla_host.app",
    "startup": "nyla_host.app",
    "PUBLIC_PATHS": "nyla_host.auth",
    "AuthHook": "nyla_host.auth",
    "need_mandate_admin": "nyla_host.auth",
    "need_sysadmin": "nyla_host.auth",
    "need_user": "nyla_host.auth",
    "require": "nyla_host.auth",
    "Identity": "nyla_host.identity",
    "Role": "nyla_host.identity",
    "OidcSettings": "nyla_host.oidc",
    "OidcVerifier": "nyla_host.oidc",
    "HostSettings": "nyla_host.state",
    "HostState": "nyla_host.state",
    "request_now": "nyla_host.timezone",
    "request_timezone": "nyla_host.timezone",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'nyla_host' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
