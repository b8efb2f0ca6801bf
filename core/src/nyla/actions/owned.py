"""The owned ids an action call carries, put through the kernel's one owned-id check
(:func:`nyla.agent.authorize.authorize`): its references and any argument that check knows
by name (``connectionId``, ...)."""

from __future__ import annotations

import functools
from types import SimpleNamespace
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, Field, create_model

from nyla.actions.catalog import reference_fields
from nyla.agent.authorize import Owned, authorize, owned_fields
from nyla.models.tools import ToolContext, ToolResult

if TYPE_CHECKING:
    from nyla.db import Database


@functools.cache
def owned_view(params: type[BaseModel]) -> type[BaseModel] | None:
    """A model holding only the owned-id arguments of ``params``, each marked with its kind
    (``None`` when it has none)."""
    kinds = {name: kind for name, _wire, kind in owned_fields(params)}
    kinds.update({name: kind for name, _wire, kind, _many in reference_fields(params)})
    if not kinds:
        return None
    fields: Any = {
        name: (Annotated[Any, Owned(kind)], Field(None, alias=params.model_fields[name].alias))
        for name, kind in kinds.items()
    }
    return create_model(f"{params.__name__}Owned", **fields)


async def check_owned(
    tool: str, params: BaseModel, ctx: ToolContext, db: Database | None
) -> ToolResult | None:
    """``None`` when every owned id in ``params`` is the run's to use, else the refusal."""
    view = owned_view(type(params))
    if view is None:
        return None
    values = {name: getattr(params, name) for name in view.model_fields}
    return await authorize(SimpleNamespace(name=tool), view.model_construct(**values), ctx, db)
