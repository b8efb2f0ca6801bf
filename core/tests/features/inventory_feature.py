"""A second, small feature for the tests, written as a plugin would be (``nyla.sdk`` only):
``inventory`` — stock items with their supplier's contact person — with its own tables,
ontology and seed data. Its data holds personal data, so it declares
``requires_neutralization = True``: the data agent's model calls are neutralised whatever the
run that asked does."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Column, Integer, MetaData, Numeric, String, Table, delete, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

import nyla.sdk as onto
from nyla.sdk import (
    BenchmarkQuestion,
    FeatureField,
    FeatureTable,
    OntologyDescriptor,
    hookimpl,
)

CODE = "inventory"
METADATA = MetaData()

instances = Table(
    "inventory_instances",
    METADATA,
    Column("feature_instance_id", String(64), primary_key=True),
    Column("data_version", Integer, nullable=False, default=0),
)
items = Table(
    "inventory_items",
    METADATA,
    Column("feature_instance_id", String(64), primary_key=True),
    Column("sku", String(32), primary_key=True),
    Column("name", String(200), nullable=False),
    Column("quantity", Integer, nullable=False),
    Column("unit_price", Numeric(12, 2), nullable=False),
    Column("stock_value_total", Numeric(14, 2), nullable=False),
    Column("supplier_contact", String(200), nullable=False),
)

#: what an instance holds after :meth:`InventoryProvider.seed` (sku, name, qty, price, contact)
ITEMS = [
    ("A-100", "Office chair", 12, 180.50, "Frau Anna Meier, anna.meier@example.ch"),
    ("A-200", "Standing desk", 4, 740.00, "Herr Beat Huber, beat.huber@example.ch"),
    ("B-300", "Monitor arm", 30, 95.25, "Frau Anna Meier, anna.meier@example.ch"),
]

TABLES = [
    FeatureTable(
        name="inventory_items",
        description="Stock items with quantity on hand, unit price and the supplier's contact.",
        primary_key=["sku"],
        fields=[
            FeatureField(name="sku", type="string", description="Stock keeping unit"),
            FeatureField(name="name", type="string"),
            FeatureField(name="quantity", type="integer", description="Units on hand"),
            FeatureField(name="unit_price", type="number", description="CHF per unit"),
            FeatureField(
                name="stock_value_total",
                type="number",
                description="quantity × unit_price, already a total (CHF)",
            ),
            FeatureField(name="supplier_contact", type="string", description="Who to call"),
        ],
    )
]


def build_ontology() -> OntologyDescriptor:
    """Items, one rule (a price is never summed) and one pattern."""
    return OntologyDescriptor(
        feature_code=CODE,
        entities=[
            onto.Entity(
                name="StockItem",
                table="inventory_items",
                description="One article the shop keeps in stock",
                key_fields=["sku"],
            )
        ],
        constraints=[
            onto.Constraint(
                kind=onto.ConstraintKind.NEVER_AGGREGATE,
                table="inventory_items",
                fields=["unit_price"],
                reason="a unit price is per article; summing prices means nothing",
            )
        ],
        canonical_patterns=[
            onto.CanonicalPattern(
                name="supplier_of_item",
                intent="who supplies an article",
                description="Read the article's row by sku and answer with its supplier_contact.",
                steps=[
                    onto.PatternStep(
                        tool="queryTable",
                        arguments={
                            "table": "inventory_items",
                            "filters": [{"field": "sku", "op": "eq", "value": "<sku>"}],
                        },
                    )
                ],
            )
        ],
    )


class InventoryProvider:
    """The inventory tables in the kernel's database; ``seed`` fills an instance."""

    def __init__(self) -> None:
        self.db: Any = None

    def bind(self, db: Any) -> None:
        self.db = db

    def sqlalchemy_tables(self) -> dict[str, Any]:
        return {"inventory_items": items}

    async def ensure_tables(self) -> None:
        await self.db.ensure_ready()
        schema = getattr(self.db, "schema", None)
        async with self.db.engine.begin() as conn:
            if schema:
                conn = await conn.execution_options(schema_translate_map={None: schema})
            await conn.run_sync(METADATA.create_all)

    async def data_version(self, feature_instance_id: str) -> str:
        async with self.db.session() as s:
            version = await s.scalar(
                select(instances.c.data_version).where(
                    instances.c.feature_instance_id == feature_instance_id
                )
            )
        return str(version or 0)

    async def seed(self, feature_instance_id: str, **_: Any) -> dict[str, int]:
        await self.ensure_tables()
        rows = [
            {
                "feature_instance_id": feature_instance_id,
                "sku": sku,
                "name": name,
                "quantity": qty,
                "unit_price": price,
                "stock_value_total": round(qty * price, 2),
                "supplier_contact": contact,
            }
            for sku, name, qty, price, contact in ITEMS
        ]
        async with self.db.session() as s:
            await s.execute(delete(items).where(items.c.feature_instance_id == feature_instance_id))
            await s.execute(pg_insert(items).values(rows))
            bumped = await s.execute(
                update(instances)
                .where(instances.c.feature_instance_id == feature_instance_id)
                .values(data_version=instances.c.data_version + 1)
            )
            if not bumped.rowcount:
                await s.execute(
                    pg_insert(instances).values(
                        feature_instance_id=feature_instance_id, data_version=1
                    )
                )
        return {"inventory_items": len(rows)}


class InventoryFeature:
    """Stock items of a small shop (a feature with an ontology and personal data)."""

    code = CODE
    label = "Inventory (test feature)"
    requires_neutralization = True

    def __init__(self) -> None:
        self._provider = InventoryProvider()

    def tables(self) -> list[FeatureTable]:
        return [t.model_copy(deep=True) for t in TABLES]

    def data_provider(self) -> InventoryProvider:
        return self._provider

    def get_agent_ontology(self) -> OntologyDescriptor:
        return build_ontology()

    def get_agent_domain_hints(self) -> str:
        return "Stock items; stock_value_total is already a total."

    def benchmark_questions(self) -> list[BenchmarkQuestion]:
        return []


class NoOntologyFeature(InventoryFeature):
    """The same tables under another code, without an ontology (it gets no data agent)."""

    code = "ledgerless"
    requires_neutralization = False

    def get_agent_ontology(self) -> Any:
        return None


class InventoryPlugin:
    """The plugin object contributing the inventory feature."""

    def __init__(self, *features: Any) -> None:
        self.features = list(features) or [InventoryFeature()]

    @hookimpl
    def nyla_features(self) -> list[Any]:
        return list(self.features)
