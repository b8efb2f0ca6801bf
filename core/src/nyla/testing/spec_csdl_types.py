"""The types of a CSDL document, as closed JSON Schema (for :mod:`nyla.testing.spec_csdl`).

An entity or complex type becomes an object of its structural properties and its base
types' (navigation properties appear only when expanded, and nyla expands none); a type
with derived types becomes ``anyOf`` the type and each derived one, told apart on the wire by
``@odata.type``. ``Nullable`` (true unless said otherwise) admits ``null``; an enum admits its
members (a flags enum any text: its values combine). Edm primitives map as OData's JSON
format writes them (https://docs.oasis-open.org/odata/odata-json-format/v4.01/): 64-bit
integers as numbers, ``Edm.Double`` as a number or ``INF`` / ``-INF`` / ``NaN``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

_EDM = "{http://docs.oasis-open.org/odata/ns/edm}"
_PRIMITIVES: dict[str, dict[str, Any]] = {
    "Edm.String": {"type": "string"},
    "Edm.Boolean": {"type": "boolean"},
    "Edm.Int16": {"type": "integer"},
    "Edm.Int32": {"type": "integer"},
    "Edm.Int64": {"type": "integer"},
    "Edm.Byte": {"type": "integer"},
    "Edm.SByte": {"type": "integer"},
    "Edm.Double": {"anyOf": [{"type": "number"}, {"enum": ["INF", "-INF", "NaN"]}]},
    "Edm.Single": {"anyOf": [{"type": "number"}, {"enum": ["INF", "-INF", "NaN"]}]},
    "Edm.Decimal": {"type": "number"},
}
#: instance annotations Graph documents on any object it answers
_ANNOTATIONS = ("@odata.type", "@odata.etag", "@odata.id")
#: instance annotations documented for one type (and those derived from it) only:
#: driveItem (https://learn.microsoft.com/en-us/graph/api/resources/driveitem#instance-attributes),
#: attachments (https://learn.microsoft.com/en-us/graph/api/attachment-get, the answers shown)
_TYPE_ANNOTATIONS = {
    "microsoft.graph.driveItem": ("@microsoft.graph.downloadUrl",),
    "microsoft.graph.attachment": ("@odata.mediaContentType",),
}


class CsdlModel:
    """Lookups over one CSDL document, and the schemas of the types asked for so far."""

    def __init__(self, root: ET.Element, narrow: dict[str, list[str]] | None = None) -> None:
        #: where CSDL types a value only as a base (``entity``), the types it can be here
        self.narrow = narrow or {}
        self.types: dict[str, ET.Element] = {}
        self.aliases: dict[str, str] = {}
        self.bindables: dict[str, list[ET.Element]] = {}
        self.sets: dict[str, tuple[str, bool]] = {}
        for schema in root.iter(f"{_EDM}Schema"):
            space = schema.get("Namespace", "")
            if schema.get("Alias"):
                self.aliases[schema.get("Alias", "")] = space
            for node in schema:
                tag = node.tag.removeprefix(_EDM)
                if tag in ("EntityType", "ComplexType", "EnumType"):
                    self.types[f"{space}.{node.get('Name')}"] = node
                elif tag in ("Function", "Action") and node.get("IsBound") == "true":
                    self.bindables.setdefault(node.get("Name", ""), []).append(node)
                elif tag == "EntityContainer":
                    for item in node:
                        many = item.tag == f"{_EDM}EntitySet"
                        kind = item.get("EntityType") or item.get("Type") or ""
                        self.sets[item.get("Name", "")] = (self.qualify(kind), many)
        self._name_of = {id(node): name for name, node in self.types.items()}
        self.children: dict[str, list[str]] = {}
        for name, node in self.types.items():
            if node.get("BaseType"):
                self.children.setdefault(self.qualify(node.get("BaseType", "")), []).append(name)
        self.wanted: set[str] = set()

    # ---- names ----------------------------------------------------------------------------

    def qualify(self, name: str) -> str:
        """``graph.x`` as ``microsoft.graph.x``."""
        space, _, local = name.rpartition(".")
        return f"{self.aliases.get(space, space)}.{local}" if space else name

    def split(self, kind: str) -> tuple[str, bool]:
        """``Collection(graph.x)`` as ``("microsoft.graph.x", True)``."""
        if kind.startswith("Collection("):
            return self.qualify(kind[11:-1]), True
        return self.qualify(kind), False

    def container(self, name: str) -> tuple[str, bool]:
        """The type of an entity set (many) or singleton."""
        return self.sets[name]

    def lineage(self, kind: str) -> list[ET.Element]:
        """The type and its base types, the type first."""
        out = []
        node = self.types.get(kind)
        while node is not None:
            out.append(node)
            base = node.get("BaseType")
            node = self.types.get(self.qualify(base)) if base else None
        return out

    def member(self, kind: str, name: str) -> tuple[str, bool] | None:
        """The type of a property or navigation property of ``kind`` (or its bases)."""
        for node in self.lineage(kind):
            for prop in node:
                if prop.get("Name") == name and prop.tag in (
                    f"{_EDM}Property",
                    f"{_EDM}NavigationProperty",
                ):
                    return self.split(prop.get("Type", ""))
        return None

    def names(self, kind: str) -> list[str]:
        """Every property and navigation property name of ``kind`` and its bases."""
        return sorted({p.get("Name", "") for n in self.lineage(kind) for p in n if p.get("Name")})

    def bound(self, name: str, kind: str, many: bool) -> ET.Element | None:
        """The function or action ``name`` bound to ``kind`` (or a base type)."""
        kinds = {self._name_of[id(node)] for node in self.lineage(kind)}
        for node in self.bindables.get(name, []):
            binding = node.find(f"{_EDM}Parameter")
            if binding is None:
                continue
            target, target_many = self.split(binding.get("Type", ""))
            if target in kinds and target_many == many:
                return node
        return None

    # ---- schemas --------------------------------------------------------------------------

    def ref(self, kind: str, variant: str = "") -> dict[str, Any]:
        """A reference to the schema of ``kind``; ``variant`` ``removed``: as a delta item,
        which may carry ``@removed``; ``body``: as a request body creates or updates it,
        with its contained navigation properties (OData deep insert)."""
        if kind in self.narrow:
            return {"anyOf": [self.ref(k, variant) for k in self.narrow[kind]]}
        name = f"{kind}@{variant}" if variant else kind
        self.wanted.add(name)
        return {"$ref": f"#/components/schemas/{name}"}

    def collection(self, item: dict[str, Any]) -> dict[str, Any]:
        """An OData collection answer of ``item``\\ s."""
        link = {"type": "string"}
        return {
            "type": "object",
            "required": ["value"],
            "properties": {
                "value": {"type": "array", "items": item},
                "@odata.context": link,
                "@odata.nextLink": link,
                "@odata.deltaLink": link,
                "@odata.count": {"type": "integer"},
            },
        }

    def schema_of(self, kind: str, nullable: bool, variant: str = "") -> dict[str, Any]:
        """The schema of a property or parameter type (``variant`` ``body``: as sent)."""
        name, many = self.split(kind)
        if name in _PRIMITIVES:
            one = dict(_PRIMITIVES[name])
        elif name.startswith("Edm."):
            one = {"type": "string"}
        else:
            one = self.ref(name, "body" if variant == "body" else "")
        if many:
            return {"type": "array", "items": one}
        if not nullable:
            return one
        if "type" in one:
            return {**one, "type": [one["type"], "null"]}
        return {"anyOf": [one, {"type": "null"}]}

    def _own(self, kind: str, navigation: bool = False, sent: bool = False) -> dict[str, Any]:
        """The object of ``kind``'s properties; a complex type's contained navigation
        properties are part of its value, an entity's only when expanded (or, in a request
        body, inserted: ``navigation``)."""
        props: dict[str, Any] = {name: {"type": "string"} for name in _ANNOTATIONS}
        lineage = self.lineage(kind)
        for node in lineage:
            for name in _TYPE_ANNOTATIONS.get(self._name_of[id(node)], ()):
                props[name] = {"type": "string"}
        complex_type = lineage[0].tag == f"{_EDM}ComplexType"
        tags = [f"{_EDM}Property"]
        tags += [f"{_EDM}NavigationProperty"] if complex_type or navigation else []
        for node in reversed(lineage):
            for prop in node:
                if prop.tag not in tags or prop.get("Type") == "Edm.Stream":
                    continue
                nullable = prop.get("Nullable") != "false"
                variant = "body" if sent else ""
                props[prop.get("Name", "")] = self.schema_of(
                    prop.get("Type", ""), nullable, variant
                )
        return {"type": "object", "properties": props}

    def _enum(self, node: ET.Element, sent: bool = False) -> dict[str, Any]:
        if node.get("IsFlags") == "true":
            return {"type": "string"}
        names = [m.get("Name", "") for m in node.findall(f"{_EDM}Member")]
        if sent:
            # Graph reads enum values regardless of case, and its pages send them so
            # (itemBody contentType "HTML" / "Text" in message-create); answers use the names
            return {"type": "string", "pattern": "^(?i:" + "|".join(map(re.escape, names)) + ")$"}
        return {"enum": names}

    def _derived(self, kind: str) -> list[str]:
        out, todo = [], list(self.children.get(kind, []))
        while todo:
            name = todo.pop()
            out.append(name)
            todo.extend(self.children.get(name, []))
        return sorted(out)

    def schemas(self) -> dict[str, Any]:
        """The schemas of every type referred to so far (and of the types they reach)."""
        out: dict[str, Any] = {}
        while self.wanted - set(out):
            for name in sorted(self.wanted - set(out)):
                out[name] = self._build(name)
        return dict(sorted(out.items()))

    def _build(self, name: str) -> dict[str, Any]:
        if name.endswith("@removed"):
            own = self._own(name.removesuffix("@removed"))
            reason = {"type": "object", "properties": {"reason": {"enum": ["changed", "deleted"]}}}
            own["properties"]["@removed"] = reason
            return own
        if name.endswith("@body"):
            base = name.removesuffix("@body")
            node = self.types[base]
            if node.tag == f"{_EDM}EnumType":
                return self._enum(node, sent=True)
            return self._own(base, navigation=node.tag == f"{_EDM}EntityType", sent=True)
        node = self.types[name]
        if node.tag == f"{_EDM}EnumType":
            return self._enum(node)
        derived = self._derived(name)
        if not derived:
            return self._own(name)
        return {"anyOf": [self._own(n) for n in [name, *derived]]}
