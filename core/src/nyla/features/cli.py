"""``nyla feature``: business features — list, seed an instance, inspect tables and the
data agent's prompt, ask the data agent a question."""

from __future__ import annotations

from typing import Any

import click

from nyla.commands.output import emit_json, json_option, run_async, table


def _kernel() -> Any:
    from nyla.kernel import Kernel

    return Kernel()


def _fail(exc: Exception) -> click.ClickException:
    return click.ClickException(str(exc))


@click.group("feature")
def feature() -> None:
    """Business features: seed data, inspect tables, ask the data agent."""


@feature.command("list")
@json_option
def list_features(as_json: bool) -> None:
    """Installed features with their tables, ontology and benchmark questions."""
    kernel = _kernel()
    rows = []
    for code in kernel.features.codes():
        f = kernel.features.feature(code)
        rows.append(
            {
                "code": code,
                "label": f.label,
                "tables": [t.name for t in f.tables()],
                "ontology": kernel.features.ontology(code) is not None,
                "questions": len(f.benchmark_questions()),
            }
        )
    if as_json:
        emit_json(rows)
        return
    table(
        "Features",
        ["Code", "Label", "Tables", "Ontology", "Questions"],
        [
            [
                r["code"],
                r["label"],
                ", ".join(r["tables"]),
                "yes" if r["ontology"] else "no",
                r["questions"],
            ]
            for r in rows
        ],
    )


@feature.command("seed")
@click.argument("code")
@click.option("--instance", "instance_id", required=True, help="Feature instance id to fill.")
@click.option(
    "--seed", "seed", type=int, default=None, help="Generator seed (default: the feature's)."
)
@json_option
def seed(code: str, instance_id: str, seed: int | None, as_json: bool) -> None:
    """Replace an instance's data with the feature's generated data set."""
    from rich.console import Console

    from nyla.errors import NylaError

    async def go() -> dict[str, Any]:
        kernel = _kernel()
        try:
            with Console(stderr=True).status(f"seeding {code} instance {instance_id} ..."):
                return await kernel.features.seed(code, instance_id, seed=seed)
        finally:
            await kernel.aclose()

    try:
        counts = run_async(go())
    except NylaError as exc:
        raise _fail(exc) from exc
    if as_json:
        emit_json({"feature": code, "instance": instance_id, "rows": counts})
        return
    table(f"Seeded {code} / {instance_id}", ["Table", "Rows"], sorted(counts.items()))


@feature.command("tables")
@click.argument("code")
@json_option
def tables(code: str, as_json: bool) -> None:
    """The tables and typed fields the data agent sees."""
    from nyla.errors import NylaError

    try:
        items = _kernel().features.tables(code)
    except NylaError as exc:
        raise _fail(exc) from exc
    if as_json:
        emit_json([t.to_wire() for t in items])
        return
    table(
        f"{code} tables",
        ["Table", "Field", "Type", "Description"],
        [[t.name, f.name, f.type, f.description] for t in items for f in t.fields],
    )


@feature.command("prompt")
@click.argument("code")
@click.option(
    "--legacy", is_flag=True, help="The legacy domain-hints prompt instead of the ontology."
)
def prompt(code: str, legacy: bool) -> None:
    """Print the data agent's system prompt (ontology compiled, or legacy hints)."""
    from nyla.errors import NylaError

    try:
        click.echo(_kernel().features.schema_prompt(code, use_ontology=not legacy))
    except NylaError as exc:
        raise _fail(exc) from exc


@feature.command("ask")
@click.argument("code")
@click.argument("question")
@click.option("--instance", "instance_id", required=True, help="Feature instance to ask.")
@click.option("--model", default=None, help="Model id (default: the selector's choice).")
@click.option(
    "--mode",
    type=click.Choice(["baseline", "phase1", "phase2"]),
    default="phase2",
    show_default=True,
)
@click.option("--max-rounds", default=12, show_default=True)
@click.option("--user", "user_id", default=None, help="Ask as this user (default: $NYLA_USER).")
@click.option("--mandate", "mandate_id", default=None, help="The mandate the user asks in.")
@json_option
def ask(
    code: str,
    question: str,
    instance_id: str,
    model: str | None,
    mode: str,
    max_rounds: int,
    user_id: str | None,
    mandate_id: str | None,
    as_json: bool,
) -> None:
    """Ask the feature data agent a QUESTION about one instance, as a user who may run the
    agent (service.agent; refused with exit code 3 otherwise)."""
    from nyla.access.permissions import ServiceAccessDenied
    from nyla.errors import NylaError
    from nyla.eval.harness import MODES
    from nyla.identity import default_user
    from nyla.models.agent import AgentConfig, RunContext

    validate, use_ontology = MODES[mode]

    async def go() -> Any:
        kernel = _kernel()
        if model and model.startswith("eval:"):  # the offline scripted policies
            from nyla.eval.policies import install_policies

            install_policies(kernel.plugins, kernel.features.feature(code).benchmark_questions())
        try:
            # the CLI's identity, prepared as every run is (service access, model access)
            asker = RunContext(
                user_id=user_id or default_user(),
                mandate_id=mandate_id,
                feature_instance_id=instance_id,
            )
            context = await kernel.agent.user_context(asker)
            return await kernel.features.run_data_agent(
                code,
                question,
                context=context,
                feature_instance_id=instance_id,
                model=model,
                config=AgentConfig(max_rounds=max_rounds),
                validate=validate,
                use_ontology=use_ontology,
            )
        finally:
            await kernel.aclose()

    try:
        result = run_async(go())
    except ServiceAccessDenied:
        raise  # the nyla command answers it: exit code 3, naming the permission
    except NylaError as exc:
        raise _fail(exc) from exc
    if as_json:
        emit_json(result.to_wire())
        return
    click.echo(result.answer)
    table(
        None,
        ["Status", "Rounds", "Cost (CHF)", "Validator rejects", "Repaired", "Calls"],
        [
            [
                result.status,
                result.rounds,
                f"{result.cost_chf:.4f}",
                result.rejections,
                result.repaired_rejections,
                len(result.calls),
            ]
        ],
    )
