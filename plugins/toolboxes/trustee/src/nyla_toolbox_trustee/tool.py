"""The ``queryFeatureInstance`` tool."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from nyla.sdk import ServiceUnavailableError, Tool, ToolContext, ToolResult

FEATURE_CODE = "trustee"

DESCRIPTION = (
    "Ask a question about the accounting data (accounts with monthly balances, journal "
    "entries and lines) of a trustee feature instance. A specialised data agent answers it "
    "from the tables with exact figures. Ask one precise question with dates or periods."
)


class QueryFeatureInstanceArgs(BaseModel):
    """Arguments of ``queryFeatureInstance``."""

    model_config = ConfigDict(populate_by_name=True)

    question: str = Field(description="The question, with the period or dates it is about.")
    feature_instance_id: str | None = Field(
        default=None,
        alias="featureInstanceId",
        description="The feature instance; defaults to the run's feature instance.",
    )


async def query_feature_instance(args: QueryFeatureInstanceArgs, ctx: ToolContext) -> ToolResult:
    """Run the trustee data agent on the question within the caller's remaining limits."""
    try:
        features = ctx.services.features
        installed = FEATURE_CODE in features.codes()
    except ServiceUnavailableError:
        installed = False
    if not installed:
        return ToolResult.fail(
            "the trustee feature is not installed (nyla-feature-trustee)",
            "NOT_AVAILABLE",
            suggestion="install nyla-feature-trustee or answer without this tool",
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
        result = await features.run_data_agent(
            FEATURE_CODE,
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
    data = result.to_wire()
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
