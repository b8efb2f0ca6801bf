"""``kernel.features``: feature lookup, table tools with validator and cache, schema prompts,
seeding, and the feature data agent."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel
from sqlalchemy.exc import SQLAlchemyError

from nyla.errors import ConfigurationError, DatabaseQueryError
from nyla.features.arguments import AggregateArgs, BrowseArgs, QueryArgs
from nyla.features.cache import ResultCache
from nyla.features.sql import (
    QueryArgumentError,
    TableBinding,
    build_aggregate,
    build_query,
    build_sample,
    jsonable,
)
from nyla.features.validator import QueryValidator
from nyla.models.feature import Feature, FeatureTable
from nyla.models.ontology import OntologyDescriptor

if TYPE_CHECKING:
    from nyla.db import Database
    from nyla.features.data_agent import FeatureAgentResult
    from nyla.features.ports import AgentLoop, FeaturePlugins
    from nyla.models.agent import AgentConfig, AgentEvent, RunContext
    from nyla.models.tool_services import PlaceholderSession

log = logging.getLogger(__name__)

DISABLE_ONTOLOGY_ENV = "NYLA_DISABLE_FEATURE_ONTOLOGY"


def ontology_disabled() -> bool:
    """``NYLA_DISABLE_FEATURE_ONTOLOGY=1`` forces the legacy domain-hints path (eval only)."""
    return os.environ.get(DISABLE_ONTOLOGY_ENV, "").strip().lower() not in ("", "0", "false", "no")


ArgsT = TypeVar("ArgsT", bound=BaseModel)


class FeatureService:
    """Feature data access for agents and the CLI (built lazily as ``kernel.features``): the
    features of ``plugins``, their data in ``db``, their data agent run by ``agent_loop``.

    Table tools run through :meth:`browse_table`, :meth:`query_table` and
    :meth:`aggregate_table`: SQL from SQLAlchemy Core only, every query scoped to one feature
    instance, results cached for 5 minutes per call and dropped when the instance's data
    version changes.
    """

    def __init__(self, db: Database, plugins: FeaturePlugins, agent_loop: AgentLoop) -> None:
        self.db = db
        self.plugins = plugins
        self.agent_loop = agent_loop
        self.cache = ResultCache()
        self._bindings: dict[str, dict[str, TableBinding]] = {}
        self._ready: set[int] = set()  # ids of providers bound and with tables
        self._lock = asyncio.Lock()

    # ---- features -----------------------------------------------------------------------

    def codes(self) -> list[str]:
        """Codes of the installed features."""
        return sorted(self.plugins.features)

    def feature(self, code: str) -> Feature:
        """The feature with ``code`` or a :class:`ConfigurationError` naming the known ones."""
        features = self.plugins.features
        if code not in features:
            known = ", ".join(sorted(features)) or "none installed"
            hint = self.plugins.failure_hint("features")
            raise ConfigurationError(f"unknown feature {code!r} (features: {known}){hint}")
        return features[code]

    async def feature_of_instance(self, instance_id: str, feature_code: str | None) -> str:
        """The feature with an ontology whose instance ``instance_id`` is (see
        :mod:`nyla.features.instances`)."""
        from nyla.features.instances import feature_of_instance

        return await feature_of_instance(self, instance_id, feature_code)

    def requires_neutralization(self, code: str) -> bool:
        """Whether the feature's data must be neutralised before any model sees it."""
        from nyla.features.instances import requires_neutralization

        return requires_neutralization(self, code)

    def ontology(self, code: str, *, use_ontology: bool = True) -> OntologyDescriptor | None:
        """The feature's ontology, or ``None`` (disabled, absent, or broken: a broken
        ``get_agent_ontology`` is logged and treated as absent)."""
        if not use_ontology or ontology_disabled():
            return None
        getter = getattr(self.feature(code), "get_agent_ontology", None)
        if getter is None:
            return None
        try:
            return getter()
        except Exception as exc:
            log.warning("feature %s: get_agent_ontology() failed: %r", code, exc)
            return None

    def domain_hints(self, code: str) -> str:
        """The feature's legacy free-text hints ('' when it has none)."""
        getter = getattr(self.feature(code), "get_agent_domain_hints", None)
        try:
            return (getter() if getter else "") or ""
        except Exception as exc:
            log.warning("feature %s: get_agent_domain_hints() failed: %r", code, exc)
            return ""

    def tables(self, code: str) -> list[FeatureTable]:
        """The tables the data agent sees."""
        return list(self.feature(code).tables())

    def validator(self, code: str, *, use_ontology: bool = True) -> QueryValidator:
        """A validator over the feature's tables, wired to its ontology when there is one."""
        return QueryValidator(self.tables(code), self.ontology(code, use_ontology=use_ontology))

    def bindings(self, code: str) -> dict[str, TableBinding]:
        """Each declared table bound to the provider's SQLAlchemy table."""
        if code not in self._bindings:
            sa_tables = self.feature(code).data_provider().sqlalchemy_tables()
            out = {}
            for t in self.tables(code):
                if t.name not in sa_tables:
                    raise ConfigurationError(
                        f"feature {code}: table {t.name!r} has no SQLAlchemy table in its provider"
                    )
                out[t.name] = TableBinding(sa_tables[t.name], {f.name: f.type for f in t.fields})
            self._bindings[code] = out
        return self._bindings[code]

    async def provider(self, code: str) -> Any:
        """The feature's data provider bound to the kernel's database, tables created."""
        provider = self.feature(code).data_provider()
        if id(provider) not in self._ready:
            async with self._lock:
                if id(provider) not in self._ready:
                    if hasattr(provider, "bind"):
                        provider.bind(self.db)
                    await self.db.ensure_ready()
                    if hasattr(provider, "ensure_tables"):
                        await provider.ensure_tables()
                    self._ready.add(id(provider))
        return provider

    async def data_version(self, code: str, instance_id: str) -> str:
        """The instance's current data version (cache validity)."""
        provider = await self.provider(code)
        return str(await provider.data_version(instance_id))

    async def seed(self, code: str, instance_id: str, *, seed: int | None = None) -> dict[str, Any]:
        """Fill an instance with the feature's generated data (the provider must offer
        ``seed``); drops cached results of the instance."""
        provider = await self.provider(code)
        if not hasattr(provider, "seed"):
            raise ConfigurationError(f"feature {code} has no data generator")
        kwargs = {} if seed is None else {"seed": seed}
        counts = await provider.seed(instance_id, **kwargs)
        self.cache.invalidate(code, instance_id)
        return counts

    # ---- table tools --------------------------------------------------------------------

    async def browse_table(
        self, code: str, instance_id: str, args: BrowseArgs | dict[str, Any]
    ) -> dict[str, Any]:
        """Without a table: the tables. With one: its fields and sample rows."""
        parsed = _as(BrowseArgs, args)
        tables = self.tables(code)
        if parsed.table is None:
            return {
                "tables": [
                    {"name": t.name, "description": t.description, "fields": len(t.fields)}
                    for t in tables
                ]
            }
        table = next((t for t in tables if t.name == parsed.table), None)
        if table is None:
            raise QueryArgumentError(f"unknown table {parsed.table!r}")
        binding = self.bindings(code)[table.name]

        async def run() -> dict[str, Any]:
            rows = await self._fetch(build_sample(binding, instance_id, parsed.sample_rows))
            return {
                "table": table.name,
                "description": table.description,
                "fields": [f.to_wire() for f in table.fields],
                "sampleRows": rows,
            }

        return await self._cached(code, instance_id, "browseTable", parsed, run)

    async def query_table(
        self, code: str, instance_id: str, args: QueryArgs | dict[str, Any]
    ) -> dict[str, Any]:
        """Rows matching the filters (an empty list when none match)."""
        parsed = _as(QueryArgs, args)
        stmt = build_query(self._binding(code, parsed.table), instance_id, parsed)

        def answer(rows: list[dict[str, Any]]) -> dict[str, Any]:
            return {"table": parsed.table, "rowCount": len(rows), "rows": rows}

        return await self._rows(code, instance_id, "queryTable", parsed, stmt, answer)

    async def aggregate_table(
        self, code: str, instance_id: str, args: AggregateArgs | dict[str, Any]
    ) -> dict[str, Any]:
        """One aggregate per group as rows ``{<group fields>, value}``."""
        parsed = _as(AggregateArgs, args)
        stmt = build_aggregate(self._binding(code, parsed.table), instance_id, parsed)

        def answer(rows: list[dict[str, Any]]) -> dict[str, Any]:
            return {
                "table": parsed.table,
                "function": parsed.function.upper(),
                "field": parsed.field,
                "groupBy": list(parsed.group_by),
                "rows": rows,
            }

        return await self._rows(code, instance_id, "aggregateTable", parsed, stmt, answer)

    async def _rows(
        self,
        code: str,
        instance_id: str,
        tool: str,
        args: BaseModel,
        stmt: Any,
        answer: Callable[[list[dict[str, Any]]], dict[str, Any]],
    ) -> dict[str, Any]:
        """The answer built from the rows of ``stmt``, cached per data version."""

        async def run() -> dict[str, Any]:
            return answer(await self._fetch(stmt))

        return await self._cached(code, instance_id, tool, args, run)

    def _binding(self, code: str, table: str) -> TableBinding:
        bindings = self.bindings(code)
        if table not in bindings:
            raise QueryArgumentError(f"unknown table {table!r}")
        return bindings[table]

    async def _fetch(self, stmt: Any) -> list[dict[str, Any]]:
        try:
            async with self.db.session() as s:
                result = await s.execute(stmt)
                return [{k: jsonable(v) for k, v in row.items()} for row in result.mappings()]
        except SQLAlchemyError as exc:
            message = str(getattr(exc, "orig", None) or exc).splitlines()[0]
            raise DatabaseQueryError(f"query failed: {message}") from exc

    async def _cached(
        self, code: str, instance_id: str, tool: str, args: BaseModel, run: Callable[[], Any]
    ) -> dict[str, Any]:
        version = await self.data_version(code, instance_id)
        key = ResultCache.key(code, instance_id, tool, args.model_dump(mode="json"))
        cached = self.cache.get(key, version)
        if cached is not None:
            return json.loads(cached)
        value = await run()
        self.cache.put(key, version, json.dumps(value))
        return value

    def table_tools(
        self,
        code: str,
        instance_id: str,
        *,
        validate: bool = True,
        use_ontology: bool = True,
        on_call: Callable[[str, dict[str, Any], Any], None] | None = None,
    ) -> list[Any]:
        """``browseTable``, ``queryTable`` and ``aggregateTable`` over one feature instance,
        with the validator in front unless ``validate=False`` (the eval baseline)."""
        from nyla.features.table_tools import build_table_tools

        validator = self.validator(code, use_ontology=use_ontology) if validate else None
        return build_table_tools(self, code, instance_id, validator=validator, on_call=on_call)

    # ---- prompts and the data agent -----------------------------------------------------

    def schema_prompt(
        self,
        code: str,
        *,
        use_ontology: bool = True,
        now: datetime | None = None,
        timezone: str = "UTC",
        temporal: bool = True,
    ) -> str:
        """The data agent's system prompt for ``code`` (see :mod:`nyla.features.prompt`)."""
        from nyla.features.prompt import build_schema_prompt

        return build_schema_prompt(
            self.feature(code),
            ontology=self.ontology(code, use_ontology=use_ontology),
            domain_hints=self.domain_hints(code),
            now=now,
            timezone=timezone,
            temporal=temporal,
        )

    async def run_data_agent(
        self,
        code: str,
        question: str,
        *,
        context: RunContext | None = None,
        feature_instance_id: str | None = None,
        config: AgentConfig | None = None,
        model: str | None = None,
        remaining_rounds: int | None = None,
        remaining_budget_chf: float | None = None,
        validate: bool = True,
        use_ontology: bool = True,
        parent_run_id: str | None = None,
        neutralization: PlaceholderSession | None = None,
        cancel: asyncio.Event | None = None,
        on_event: Callable[[AgentEvent], Any] | None = None,
    ) -> FeatureAgentResult:
        """Run the feature data agent on this service's tables and the kernel's agent loop
        (the arguments: :func:`nyla.features.data_agent.run_feature_data_agent`)."""
        from nyla.features.data_agent import run_feature_data_agent

        return await run_feature_data_agent(
            self,
            self.agent_loop,
            code,
            question,
            context=context,
            feature_instance_id=feature_instance_id,
            config=config,
            model=model,
            remaining_rounds=remaining_rounds,
            remaining_budget_chf=remaining_budget_chf,
            validate=validate,
            use_ontology=use_ontology,
            parent_run_id=parent_run_id,
            neutralization=neutralization,
            cancel=cancel,
            on_event=on_event,
        )


def _as(model: type[ArgsT], value: Any) -> ArgsT:
    """``value`` as ``model`` (validated when it is not one already)."""
    return value if isinstance(value, model) else model.model_validate(value)
