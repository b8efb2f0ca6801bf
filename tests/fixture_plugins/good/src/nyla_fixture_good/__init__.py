"""A well-behaved fixture plugin: one toolbox with one tool."""

import nyla


async def fixture_echo(ctx: nyla.ToolContext, text: str) -> str:
    """Echo the text back."""
    return text


@nyla.hookimpl
def nyla_toolboxes() -> list[nyla.Toolbox]:
    return [
        nyla.Toolbox(
            id="fixturebox", tools=[nyla.Tool.from_function(fixture_echo, name="fixtureEcho")]
        )
    ]
