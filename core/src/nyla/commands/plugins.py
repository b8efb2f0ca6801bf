"""``nyla plugins list|show|check``: the plugin inspector."""

from __future__ import annotations

import click

from nyla.commands.install import install, uninstall
from nyla.commands.output import emit_json, json_option, table


def _host():
    from nyla.plugins import PluginHost

    return PluginHost.discover(strict=False)


def _listing(refresh: bool = False):
    """What ``list`` and ``show`` print: the plugin cache's snapshot while the environment is
    unchanged (no plugin imported), else (or with ``refresh``) a discovery, which is then
    cached."""
    from nyla import plugin_cache

    snapshot = None if refresh else plugin_cache.load()
    if snapshot is not None:
        return snapshot
    host = _host()
    if plugin_cache.enabled():
        scratch = click.Group()  # the commands plugins add, for the next `nyla --help`
        plugin_cache.remember(host, scratch, host.add_cli_commands(scratch))
    return host


def _summary(contributes: dict[str, list[str]]) -> str:
    return ", ".join(f"{len(v)} {k}" for k, v in sorted(contributes.items()) if v) or "-"


@click.group()
def plugins() -> None:
    """Inspect installed plugins: what loaded, what failed and why, what each contributes."""


_refresh_option = click.option(
    "--refresh",
    is_flag=True,
    help="Discover the plugins now instead of reading the plugin cache (after changing "
    "something on the machine the cache does not watch, such as a kernel setting).",
)


@plugins.command("list")
@_refresh_option
@json_option
def list_(refresh: bool, as_json: bool) -> None:
    """All plugins: name, distribution, version, group, status, contributions.

    With NYLA_STRICT_PLUGINS=1 the command exits 1 when any plugin failed to load or loaded
    with a warning."""
    host = _listing(refresh)
    records = sorted(host.records.values(), key=lambda r: (r.group, r.name))
    if as_json:
        emit_json([r.to_dict() for r in records])
    else:
        _print_records(records)
    _exit_if_strict(host)


def _exit_if_strict(host) -> None:
    if not host.problems():  # the usual case: from the cache nyla.plugins is not imported
        return
    from nyla.plugins import strict_mode

    if strict_mode():
        names = "; ".join(host.problems())
        click.echo(
            f"error: NYLA_STRICT_PLUGINS is set and plugins have problems: {names}", err=True
        )
        raise SystemExit(1)


def _status(record) -> str:
    if record.status == "ok" and record.warnings:
        return f"ok, {len(record.warnings)} warning(s)"
    return record.status


def _with_warnings(record) -> str:
    return "; ".join([_summary(record.contributes), *record.warnings])


def _print_records(records) -> None:
    table(
        "nyla plugins",
        ["name", "distribution", "version", "group", "status", "contributes / error"],
        [
            (
                r.name,
                r.distribution,
                r.version,
                r.group,
                _status(r),
                r.error if r.status != "ok" else _with_warnings(r),
            )
            for r in records
        ],
    )


@plugins.command()
@click.argument("name")
@_refresh_option
@json_option
def show(name: str, refresh: bool, as_json: bool) -> None:
    """One plugin: its hooks, the ids it contributes, its entry point, its error."""
    host = _listing(refresh)
    record = host.records.get(name)
    if record is None:
        raise click.ClickException(
            f"no plugin named {name!r}; known: {', '.join(sorted(host.records))}"
        )
    data = record.to_dict()
    if as_json:
        emit_json(data)
        return
    rows = [
        (k, data[k])
        for k in ("name", "distribution", "version", "group", "entryPoint", "status", "error")
    ]
    rows.append(("hooks", ", ".join(record.hooks) or "-"))
    rows.extend(("warning", w) for w in record.warnings)
    for kind, ids in sorted(record.contributes.items()):
        rows.append((kind, ", ".join(ids)))
    table(f"plugin {name}", ["field", "value"], rows)


@plugins.command()
@click.argument("name", required=False)
@json_option
def check(name: str | None, as_json: bool) -> None:
    """Hook conformance and static contract checks; exit status 1 on any problem."""
    from nyla.checks import check_host

    host = _host()
    if name and name not in host.records:
        raise click.ClickException(f"no plugin named {name!r}")
    problems = check_host(host, only=name)
    checked = [
        r.name
        for r in host.records.values()
        if (not name or r.name == name) and r.status != "disabled"
    ]
    if as_json:
        emit_json(
            {"ok": not problems, "checked": checked, "problems": [p.to_dict() for p in problems]}
        )
    elif problems:
        table(
            "plugin check: problems",
            ["plugin", "subject", "problem"],
            [(p.plugin, p.subject, p.message) for p in problems],
        )
    else:
        click.echo(f"ok: {len(checked)} plugin(s) checked, no problems")
    if problems:
        raise SystemExit(1)


plugins.add_command(install)
plugins.add_command(uninstall)
