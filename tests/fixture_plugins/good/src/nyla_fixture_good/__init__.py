"""A well-behaved fixture plugin: one toolbox with one tool."""

from nyla.sdk import Tool, Toolbox, ToolContext, hookimpl


async def fixture_echo(ctx: ToolContext, text: str) -> str:
    """Echo the text back."""
    return text


@hookimpl
def nyla_toolboxes() -> list[Toolbox]:
    return [Toolbox(id="fixturebox", tools=[Tool.from_function(fixture_echo, name="fixtureEcho")])]
