"""What ``nyla plugins list`` and ``nyla --help`` show of the plugins, kept between runs.

Discovering the plugins imports every one of them and asks each for its contributions, which
is most of a CLI command's start-up. The answer depends only on the environment, so it is
stored under the user's cache directory with a key of everything it can depend on:

- each ``sys.path`` entry's distributions (``*.dist-info``, ``*.egg-info``, ``*.pth``: names
  and modification times), so installing, removing or upgrading a plugin (``uv sync``,
  ``nyla plugins install``) changes the key;
- the source files of the loaded modules that live outside the standard library and
  site-packages (editable installs such as a workspace's plugins, ``PYTHONPATH``): path,
  modification time and size;
- the Python running, every ``NYLA_*`` variable, every setting a plugin read through
  :func:`~nyla.config.config_value` during discovery (by value, hashed: never stored), and
  the config file's modification time and size;
- each ``PATH`` directory's modification time, which installing or removing a program
  changes: a plugin left out because the machine lacks something (the code toolbox without a
  working ``bwrap``) is looked at again when a program comes or goes.

Other files a plugin reads while it is discovered (data files of an editable install) and
other state of the machine (a kernel setting) are not watched: after changing one, run
``nyla plugins list --refresh`` once (or set ``NYLA_PLUGIN_CACHE=off`` while editing).

A snapshot whose key differs, that cannot be read or parsed, or that was written by another
format is ignored and discovery runs as without a cache; an unwritable cache directory only
means nothing is stored. A plugin that loaded but was left out or warned about (a hook raised
or broke its contract) is stored with its reason, since its files are watched; nothing is
stored when a plugin failed before it loaded (an import error leaves no module whose file
could be watched) or a provider's model list changes without a setting changing
(``models_cacheable = False``). ``NYLA_PLUGIN_CACHE=off`` switches the cache off (the nyla
pytest plugin does, since tests replace entry points in place).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nyla.plugin_record import PluginRecord

log = logging.getLogger(__name__)

#: bumped when the file's layout or what the key covers changes
FORMAT = 1

_DIST_SUFFIXES = (".dist-info", ".egg-info", ".egg-link", ".pth", ".egg")


def enabled() -> bool:
    """False when ``NYLA_PLUGIN_CACHE`` is ``0``/``off``/``false``/``no``."""
    return os.environ.get("NYLA_PLUGIN_CACHE", "").strip().lower() not in (
        "0",
        "off",
        "false",
        "no",
    )


@dataclass
class Snapshot:
    """The plugin records and the commands plugins add, as a discovery found them."""

    records: dict[str, PluginRecord]
    #: ``(name, short help)`` of each command the plugins add to ``nyla``
    commands: list[tuple[str, str]] = field(default_factory=list)
    #: ``(plugin, error)`` for each plugin whose ``nyla_cli_commands`` raised
    command_errors: list[tuple[str, str]] = field(default_factory=list)

    def problems(self) -> list[str]:
        """Every failure and warning as ``plugin: reason`` (as :meth:`PluginHost.problems`)."""
        records = self.records.values()
        failed = [f"{r.name}: {r.error}" for r in records if r.status == "failed"]
        return failed + [f"{r.name}: {w}" for r in records for w in r.warnings]

    def unwatched(self) -> list[str]:
        """Plugins with a problem from before they loaded (no object, so no module whose
        file the key could watch): a snapshot holding one is not stored."""
        return [
            r.name
            for r in self.records.values()
            if (r.status == "failed" or r.warnings) and r.plugin is None
        ]


def cache_file() -> Path:
    """Where this environment's snapshot lives (one file per interpreter prefix)."""
    from platformdirs import user_cache_dir

    prefix = hashlib.sha256(sys.prefix.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return Path(user_cache_dir("nyla", appauthor=False)) / "plugins" / f"{prefix}.json"


def load() -> Snapshot | None:
    """The stored snapshot when its key still matches the environment, else ``None``."""
    if not enabled():
        return None
    try:
        data = json.loads(cache_file().read_text(encoding="utf-8"))
        if data.get("format") != FORMAT:
            return None
        if data["key"] != _key(data["settings"], data["files"]):
            return None
        return Snapshot(
            records={r["name"]: _record(r) for r in data["records"]},
            commands=[(str(n), str(h)) for n, h in data["commands"]],
            command_errors=[(str(n), str(e)) for n, e in data["commandErrors"]],
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        log.debug("plugin cache unreadable, discovering: %s", exc)
        return None


def remember(host: Any, group: Any, command_errors: list[tuple[str, str]]) -> None:
    """Store the records of ``host`` (a :class:`~nyla.plugins.PluginHost`) and the commands
    its plugins added to the click ``group`` (which holds no others)."""
    snapshot = Snapshot(
        records=dict(host.records),
        commands=[(name, cmd.get_short_help_str()) for name, cmd in group.commands.items()],
        command_errors=list(command_errors),
    )
    store(snapshot, list(host.providers.values()))


def store(snapshot: Snapshot, providers: list[Any]) -> None:
    """Keep ``snapshot`` for the next command; nothing when the cache is off, a plugin failed
    before it loaded or its commands failed, a provider's models are not cacheable, or the
    directory is not writable."""
    if not enabled() or snapshot.unwatched() or snapshot.command_errors:
        return  # a plugin that failed to import left no module behind to watch
    if any(not getattr(p, "models_cacheable", True) for p in providers):
        return
    from nyla.config import settings_read

    settings = sorted(settings_read())
    files = _source_files()
    data = {
        "format": FORMAT,
        "key": _key(settings, files),
        "settings": settings,
        "files": files,
        "records": [r.to_dict() for r in snapshot.records.values()],
        "commands": snapshot.commands,
        "commandErrors": snapshot.command_errors,
    }
    import tempfile

    path = cache_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".plugins-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(data, out)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:
        log.debug("plugin cache not written: %s", exc)


def _record(data: dict[str, Any]) -> PluginRecord:
    record = PluginRecord(
        name=str(data["name"]),
        group=str(data["group"]),
        entry_point=str(data["entryPoint"]),
        status=str(data["status"]),
        error=data["error"],
        warnings=[str(w) for w in data["warnings"]],
        hooks=[str(h) for h in data["hooks"]],
        contributes={str(k): [str(i) for i in v] for k, v in data["contributes"].items()},
    )
    record._distribution = (data["distribution"], data["version"])
    return record


def _key(settings: list[str], files: list[str]) -> str:
    """The digest of everything the snapshot depends on (see the module docstring)."""
    environ = os.environ
    parts: list[Any] = [
        FORMAT,
        sys.version,
        sys.prefix,
        _distributions(),
        sorted((k, v) for k, v in environ.items() if k.startswith("NYLA_")),
        [(name, environ.get(name)) for name in settings],
        _stamp(_config_file()),
        [(path, _stamp(path)) for path in files],
        [(path, _stamp(path)) for path in environ.get("PATH", "").split(os.pathsep)],
    ]
    text = json.dumps(parts, default=str, ensure_ascii=True)
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def _config_file() -> str:
    from nyla.config import config_path

    return str(config_path())


def _stamp(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def _distributions() -> list[Any]:
    """Per ``sys.path`` entry: its distributions and ``.pth`` files with their times."""
    out: list[Any] = []
    for entry in sys.path:
        names: list[Any]
        try:
            with os.scandir(entry or ".") as listing:
                names = sorted(
                    (e.name, e.stat().st_mtime_ns)
                    for e in listing
                    if e.name.endswith(_DIST_SUFFIXES)
                )
        except NotADirectoryError:  # a zip file
            names = [_stamp(entry)]
        except OSError:
            names = []
        out.append([entry, names])
    return out


def _installed_dirs() -> tuple[str, ...]:
    """The standard library and site-packages: files there change only with the Python or a
    distribution (both in the key)."""
    import site
    import sysconfig

    dirs = [sysconfig.get_path(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")]
    dirs += [*site.getsitepackages(), site.getusersitepackages()]
    return tuple(os.path.realpath(d) + os.sep for d in dirs if d)


def _source_files() -> list[str]:
    """The file of each loaded module from outside the installed directories (editable
    installs, ``PYTHONPATH``)."""
    installed = _installed_dirs()
    files = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not isinstance(path, str):
            continue
        real = os.path.realpath(path)
        if not real.startswith(installed) and os.path.isfile(real):
            files.add(real)
    return sorted(files)
