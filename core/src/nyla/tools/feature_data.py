"""The ``featureData`` toolbox: ``queryFeatureInstance`` for every installed feature that
declares an ontology (seeds: ``_featureSubAgentTools``).

The tool looks the instance's feature up (the run's ``feature_code``, else the one installed
feature whose data holds the instance) and runs that feature's data agent: its tables, its
ontology compiled into the prompt and its query validator. The sub-agent inherits the run's
identity, model restriction, remaining rounds and budget and placeholder session; when the
feature's data requires neutralisation (``Feature.requires_neutralization``) its model calls
are neutralised whatever the run does. Its cost is charged to the run.

The toolbox is on in every run that works in a feature instance (``feature_code="*"``).
"""

from __future__ import annotations

from pydantic import Field

from nyla.errors import NylaError
from nyla.hookspecs import hookimpl
from nyla.models.tool_services import ServiceUnavailableError, ToolFeatures
from nyla.models.tools import ANY_FEATURE, Tool, Toolbox, ToolContext, ToolResult
from nyla.tools._args import Args

DESCRIPTION = (
    "Ask a question about the data of the feature instance this run works in (for example "
    "the accounting of a trustee instance). A specialised data agent answers it from the "
    "feature's tables with exact figures. Ask one precise question with dates or periods."
)


class QueryFeatureInstanceArgs(Args):
    """Arguments of ``queryFeatureInstance``."""

    question: str = Field(
        min_length=1, description="The question, with the period or dates it is about."
    )
    feature_instance_id: str | None = Field(
        default=None,
        description="The feature instance; defaults to the run's feature instance.",
    )


def _features(ctx: ToolContext) -> ToolFeatures | None:
    try:
        return ctx.services.features
    except ServiceUnavailableError:
        return None


async def query_feature_instance(args: QueryFeatureInstanceArgs, ctx: ToolContext) -> ToolResult:
    """Run the instance's feature data agent on the question within the run's limits."""
    features = _features(ctx)
    if features is None or not features.codes():
        return ToolResult.fail(
            "no feature is installed", "NOT_AVAILABLE", suggestion="answer without this tool"
        )
    instance = args.feature_instance_id or ctx.run.feature_instance_id
    if not instance:
        return ToolResult.fail(
            "no feature instance: pass featureInstanceId (or run with a feature instance)",
            "MISSING_FIELD",
            field="featureInstanceId",
        )
    if ctx.remaining_rounds is not None and ctx.remaining_rounds <= 0:
        return ToolResult.fail("no rounds left for the data agent", "LIMIT_REACHED")
    try:
        code = await features.feature_of_instance(instance, ctx.run.feature_code)
    except NylaError as exc:
        return ToolResult.fail(str(exc), "NOT_AVAILABLE", field="featureInstanceId")
    try:
        result = await features.run_data_agent(
            code,
            args.question,
            context=ctx.run,
            feature_instance_id=instance,
            remaining_rounds=ctx.remaining_rounds,
            remaining_budget_chf=ctx.remaining_budget_chf,
            parent_run_id=ctx.run_id,
            neutralization=ctx.neutralization,
            model=ctx.model,
        )
    except Exception as exc:  # the parent run goes on and sees what happened
        return ToolResult.fail(f"data agent failed: {type(exc).__name__}: {exc}", "TOOL_ERROR")
    ctx.charge(result.cost_chf)
    data = {**result.to_wire(), "featureCode": code}
    if not result.completed:
        stopped = ToolResult.fail(
            f"the data agent stopped ({result.status}): {result.answer}", "INCOMPLETE"
        )
        return stopped.model_copy(update={"data": data})
    return ToolResult.ok(content=result.answer, data=data)


def query_feature_instance_tool() -> Tool:
    """``queryFeatureInstance`` as a tool."""
    return Tool.from_model(
        "queryFeatureInstance",
        DESCRIPTION,
        QueryFeatureInstanceArgs,
        query_feature_instance,
        read_only=True,
        timeout_s=600,
    )


@hookimpl
def nyla_toolboxes() -> list[Toolbox]:
    """The kernel's ``featureData`` toolbox (on in runs of any feature instance)."""
    return [
        Toolbox(
            id="featureData",
            label="Feature data",
            description="Ask the data agent of the run's feature instance (any installed "
            "feature with an ontology).",
            tools=[query_feature_instance_tool()],
            default_active=False,
            feature_code=ANY_FEATURE,
        )
    ]
