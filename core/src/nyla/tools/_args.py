"""Shared pieces of the kernel's default tools: argument base model and error mapping."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from nyla.errors import FileAccessError, FolderNotEmptyError
from nyla.files.docrefs import DocumentReferenceError
from nyla.models.tools import Tool, ToolContext, ToolHandler, ToolResult


class Args(BaseModel):
    """Tool arguments: camelCase names for the model, unknown fields rejected."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


def guarded(
    fn: Callable[[Any, ToolContext], Awaitable[Any]],
) -> Callable[[Any, ToolContext], Awaitable[Any]]:
    """Turn the store's exceptions into repairable tool results."""

    @functools.wraps(fn)
    async def wrapper(args: Any, ctx: ToolContext) -> Any:
        try:
            return await fn(args, ctx)
        except FileAccessError as exc:
            return ToolResult.fail(
                str(exc),
                "NOT_FOUND",
                suggestion="use listFiles / listFolders to find the right id",
            )
        except FolderNotEmptyError as exc:
            return ToolResult.fail(str(exc), "FOLDER_NOT_EMPTY", field="recursive")
        except DocumentReferenceError as exc:
            return ToolResult.fail(str(exc), "INVALID_VALUE", field="documentList")
        except ValueError as exc:
            return ToolResult.fail(str(exc), "INVALID_VALUE")

    return wrapper


#: one tool of a default toolbox: (name, description, argument model, handler, read-only)
ToolSpec = tuple[str, str, type[BaseModel], ToolHandler, bool]


def tools_from(spec: list[ToolSpec]) -> list[Tool]:
    """The tools of a default toolbox from its table of :data:`ToolSpec` rows."""
    return [
        Tool.from_model(name, description, model, handler, read_only=read_only)
        for name, description, model, handler, read_only in spec
    ]
