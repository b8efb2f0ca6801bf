"""A fixture plugin that claims a toolbox id another plugin already holds."""

import nyla


async def other_echo(ctx: nyla.ToolContext, text: str) -> str:
    """Echo the text back, again."""
    return text


@nyla.hookimpl
def nyla_toolboxes() -> list[nyla.Toolbox]:
    return [
        nyla.Toolbox(id="fixturebox", tools=[nyla.Tool.from_function(other_echo, name="otherEcho")])
    ]
