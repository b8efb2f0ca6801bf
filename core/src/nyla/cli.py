"""The ``nyla`` command. Subcommands live in their own modules and are imported only when
invoked; ``nyla --help`` discovers the plugins (to list the commands they add) but imports no
vendor SDK."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

# command name -> "module:attribute". Kernel areas add their own command here.
LAZY_COMMANDS: dict[str, tuple[str, str]] = {
    "plugins": ("nyla.commands.plugins:plugins", "Inspect installed plugins."),
    "models": ("nyla.commands.catalog:models", "List models from the provider plugins."),
    "toolboxes": ("nyla.commands.catalog:toolboxes", "List toolboxes."),
    "tools": ("nyla.commands.catalog:tools", "List tools."),
    "actions": ("nyla.actions.cli:actions", "List workflow methods and their typed actions."),
    "workflows": ("nyla.actions.cli:workflows", "Stored workflow graphs of action nodes."),
    "db": ("nyla.commands.db:db", "The database (embedded PostgreSQL or NYLA_DATABASE_URL)."),
    "ai": ("nyla.ai.cli:ai", "One-off model calls and neutralization."),
    "billing": (
        "nyla.billing.cli:billing",
        "The ledger of AI calls and storage per mandate and user, limits, credit.",
    ),
    "run": ("nyla.agent.cli:run", "Run the agent on a prompt."),
    "runs": ("nyla.agent.cli:runs", "Past agent runs and their traces."),
    "knowledge": ("nyla.knowledge.cli:knowledge", "Index, search and purge the knowledge store."),
    "feature": ("nyla.features.cli:feature", "Business features: seed data, inspect tables."),
    "eval": ("nyla.eval.cli:eval_group", "Benchmark a feature's data agent."),
    "connections": ("nyla.walkers.cli:connections", "Connections to external services."),
    "sync": ("nyla.walkers.cli:sync", "Sync connected folders into the knowledge store."),
    "access": (
        "nyla.access.cli:access",
        "Who may use the agent, the knowledge store and each connector.",
    ),
    "worker": (
        "nyla.jobs.cli:worker",
        "A worker process for queued syncs (NYLA_JOBS=procrastinate).",
    ),
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on use; commands that plugins add through
    ``nyla_cli_commands`` are looked up when a name is not a kernel command."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(LAZY_COMMANDS))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in LAZY_COMMANDS:
            if cmd_name != "plugins" and _strict():
                # strict mode holds for every command; the inspector lists, then exits 1
                from nyla.plugins import PluginHost

                PluginHost.discover(strict=True)
            target = LAZY_COMMANDS[cmd_name][0]
            module, _, attr = target.partition(":")
            try:
                return getattr(importlib.import_module(module), attr)
            except ModuleNotFoundError as exc:
                if exc.name and module.startswith(exc.name):
                    return _unavailable(cmd_name, f"{module} is not part of this build")
                raise
        command = super().get_command(ctx, cmd_name)
        if command is None:
            self._add_plugin_commands()
            command = super().get_command(ctx, cmd_name)
        return command

    def _add_plugin_commands(self, *, remember: bool = False) -> None:
        """Discover the plugins and let each add its commands (once per process);
        ``remember`` keeps what was found in the plugin cache."""
        if getattr(self, "_plugin_commands_added", False):
            return
        self._plugin_commands_added = True
        from nyla.plugins import PluginHost

        host = PluginHost.discover(strict=False)
        errors = host.add_cli_commands(self)
        if remember:
            from nyla import plugin_cache

            plugin_cache.remember(host, self, errors)
        _report_command_errors(errors)

    def _plugin_command_rows(self) -> list[tuple[str, str]]:
        """``(name, short help)`` of the commands plugins add: from the plugin cache while
        the environment is unchanged (no plugin imported), else discovered and cached."""
        if not getattr(self, "_plugin_commands_added", False):
            from nyla import plugin_cache

            snapshot = plugin_cache.load()
            if snapshot is not None:
                _report_command_errors(snapshot.command_errors)
                added = {name: cmd.get_short_help_str() for name, cmd in self.commands.items()}
                return sorted({**dict(snapshot.commands), **added}.items())
        self._add_plugin_commands(remember=True)
        return [(name, cmd.get_short_help_str()) for name, cmd in sorted(self.commands.items())]

    def invoke(self, ctx: click.Context) -> Any:
        # Every nyla error (refused permission, unreachable database, unknown model ...) and
        # every database failure is the user's to read: one line and exit code 1 (3 for a
        # refused service permission, so a script can tell it apart), not a traceback
        # (NYLA_DEBUG=1 or --debug shows it). Under --json the error is JSON too.
        as_json = "--json" in ctx.args  # read before click consumes the arguments
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            if as_json:
                _json_error("UsageError" if isinstance(exc, click.UsageError) else "Error", exc)
                ctx.exit(exc.exit_code)
            raise
        except Exception as exc:
            message = user_error(exc)
            if message is None or debug_enabled():
                raise
            code = exit_code_of(exc)
            if as_json:
                _json_error(message[0], message[1])
                ctx.exit(code)
            kind = _AccessRefused if code == EXIT_ACCESS_DENIED else click.ClickException
            raise kind(f"{message[0]}: {message[1]}") from exc

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, LAZY_COMMANDS[name][1]) for name in sorted(LAZY_COMMANDS)]
        rows += self._plugin_command_rows()  # what plugins add, as `llm --help` lists them
        with formatter.section("Commands"):
            formatter.write_dl(rows)


class _AccessRefused(click.ClickException):
    """A refused service permission, in one line: exits :data:`EXIT_ACCESS_DENIED`."""

    exit_code = 3


def _strict() -> bool:
    from nyla.plugins import strict_mode

    return strict_mode()


def _report_command_errors(errors: list[tuple[str, str]]) -> None:
    for name, error in errors:
        message = f"plugin {name} could not add its commands: {error}"
        if _strict():
            raise click.ClickException(f"{message} (NYLA_STRICT_PLUGINS)")
        click.echo(f"warning: {message}", err=True)


def _json_error(kind: str, message: Any) -> None:
    from nyla.commands.output import json_line

    text = message.format_message() if isinstance(message, click.ClickException) else message
    click.echo(json_line({"error": {"type": kind, "message": str(text)}}))


def debug_enabled() -> bool:
    """Whether errors keep their traceback (``NYLA_DEBUG=1`` or ``nyla --debug``)."""
    import os

    return os.environ.get("NYLA_DEBUG", "").lower() in ("1", "true", "yes")


#: the exit code of a refused service permission (``ServiceAccessDenied``); other errors exit 1
EXIT_ACCESS_DENIED = 3


def exit_code_of(exc: BaseException) -> int:
    """The exit code of an error :func:`user_error` reads: :data:`EXIT_ACCESS_DENIED` for a
    refused service permission, else 1."""
    if "nyla.access.permissions" in sys.modules:
        from nyla.access.permissions import ServiceAccessDenied

        if isinstance(exc, ServiceAccessDenied):
            return EXIT_ACCESS_DENIED
    return 1


def user_error(exc: BaseException) -> tuple[str, str] | None:
    """(kind, one line) for an error a user can act on; ``None`` for a bug."""
    from nyla.errors import NylaError

    if isinstance(exc, NylaError):
        return type(exc).__name__, str(exc).strip().replace("\n", " ")
    if "sqlalchemy" not in sys.modules:  # no database error without it (`--help` ends here)
        return None
    from sqlalchemy.exc import DBAPIError

    if isinstance(exc, DBAPIError) and (exc.connection_invalidated or _is_connection_error(exc)):
        first = str(exc.orig or exc).strip().splitlines()
        return "DatabaseUnavailableError", (
            f"the database connection failed: {first[0] if first else type(exc).__name__}"
        )
    return None


def _is_connection_error(exc: Any) -> bool:
    from sqlalchemy.exc import InterfaceError, OperationalError

    return isinstance(exc, OperationalError | InterfaceError)


def _unavailable(name: str, reason: str) -> click.Command:
    @click.command(name, context_settings={"ignore_unknown_options": True})
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def command(args: Any) -> None:
        raise click.ClickException(f"'nyla {name}' is not available: {reason}")

    return command


def _set_debug(ctx: click.Context, param: Any, value: bool) -> None:
    if value:
        import os

        os.environ["NYLA_DEBUG"] = "1"


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="nyla", prog_name="nyla")
@click.option(
    "--debug",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_set_debug,
    help="Show tracebacks instead of one-line errors (or NYLA_DEBUG=1).",
)
def cli() -> None:
    """nyla: a plugin-driven AI agent framework.

    Agents with toolboxes, one AI service with budgets and neutralization, and a knowledge
    store on PostgreSQL + pgvector. Every inspector command takes --json.

    Exit codes: 0 done, 1 an error (one line; --debug shows the traceback), 2 a usage error,
    3 refused: the user lacks a service permission (see `nyla access list`).
    """


def main(argv: list[str] | None = None) -> Any:
    """Console entry point."""
    args = argv if argv is not None else sys.argv[1:]
    _refuse_unstorable_arguments(args)
    return cli.main(args=args, prog_name="nyla")


def _refuse_unstorable_arguments(args: list[str]) -> None:
    """Exit 2 with one line when an argument is not valid text: bytes that are not UTF-8 reach
    Python as lone surrogates, which no database, JSON or terminal output can hold."""
    from nyla.text import has_unstorable_chars

    for position, arg in enumerate(args, start=1):
        if has_unstorable_chars(arg):
            shown = arg.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")
            click.echo(
                f"Error: argument {position} ({shown}) is not valid UTF-8 text "
                "(a file or folder with such a name needs renaming first)",
                err=True,
            )
            sys.exit(2)


if __name__ == "__main__":  # pragma: no cover
    main()
