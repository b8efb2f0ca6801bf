"""A fixture plugin that claims a toolbox id another plugin already holds."""

from nyla.sdk import Tool, Toolbox, ToolContext, hookimpl


async def other_echo(ctx: ToolContext, text: str) -> str:
    """Echo the text back, again."""
    return text


@hookimpl
def nyla_toolboxes() -> list[Toolbox]:
    return [Toolbox(id="fixturebox", tools=[Tool.from_function(other_echo, name="otherEcho")])]
