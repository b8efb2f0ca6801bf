"""Where a vendor's schema and its own example of the same answer disagree, both are its word.

Vendor documents are written by hand in places: ClickUp's Get Task types an attachment's
``orientation`` as a string and shows ``null`` in the example beside it; its user schema
spells ``timezeone`` while the example shows ``timezone``. A fake built from the example would
then fail the schema, and a fake built from the schema would hide what the vendor really
sends. :func:`reconcile` widens a schema to admit its operation's documented example (``null``
where the example shows ``null``, a field the example shows), and says each place it did, so
the extracted spec records every such widening in ``x-corrections``.
"""

from __future__ import annotations

from typing import Any

from nyla.testing.spec_schema import from_example, pointer


def example_of(content: dict[str, Any]) -> Any:
    """The documented example of a media type object (``example``, or the first of
    ``examples``, at the media type or in its schema); ``None`` if there is none."""
    schema = content.get("schema") or {}
    for holder in (content, schema):
        if "example" in holder:
            return holder["example"]
        examples = holder.get("examples")
        if isinstance(examples, list) and examples:
            return examples[0]
        if isinstance(examples, dict) and examples:
            first = next(iter(examples.values()))
            return first.get("value") if isinstance(first, dict) else None
    return None


def reconcile(doc: dict[str, Any], schema: Any, value: Any, where: str) -> list[str]:
    """Widen ``schema`` (inside ``doc``, whose ``$ref``\\ s it follows) in place so that
    ``value`` fits; returns what was widened, one line each."""
    if not isinstance(schema, dict):
        return []
    if "$ref" in schema:
        return reconcile(doc, pointer(doc, schema["$ref"]), value, where)
    for key in ("allOf", "anyOf", "oneOf"):
        if key in schema and value is not None:
            return _first_object(doc, schema[key], value, where)
    if value is None:
        return _allow_null(schema, where)
    if isinstance(value, list) and schema.get("type") == "object":
        # the schema describes one of the listed objects: it is the list's items
        schema["items"] = {k: schema.pop(k) for k in list(schema) if k != "description"}
        schema["type"] = "array"
        return [f"{where}: a list (the example shows a list of the objects described)"]
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        done: list[str] = []
        for item in value:
            done += reconcile(doc, schema["items"], item, f"{where}[]")
        return done
    if isinstance(value, dict) and "properties" in schema:
        return _fields(doc, schema, value, where)
    return []


def _first_object(doc: dict[str, Any], members: list[Any], value: Any, where: str) -> list[str]:
    for member in members:
        target = pointer_of(doc, member)
        if isinstance(target, dict) and "properties" in target:
            return reconcile(doc, member, value, where)
    return []


def pointer_of(doc: dict[str, Any], schema: Any) -> Any:
    """``schema`` with one ``$ref`` followed."""
    return pointer(doc, schema["$ref"]) if isinstance(schema, dict) and "$ref" in schema else schema


def _fields(
    doc: dict[str, Any], schema: dict[str, Any], value: dict[str, Any], where: str
) -> list[str]:
    done = []
    props = schema["properties"]
    for key, sub in value.items():
        if key in props:
            if sub is None and "$ref" in props[key]:
                props[key] = {"anyOf": [props[key], {"type": "null"}]}
                done.append(f"{where}.{key}: null allowed (the example shows null)")
            else:
                done += reconcile(doc, props[key], sub, f"{where}.{key}")
        elif not schema.get("additionalProperties"):
            props[key] = from_example(sub)
            done.append(f"{where}.{key}: added (the example shows it, the schema does not)")
    return done


def _allow_null(schema: dict[str, Any], where: str) -> list[str]:
    kind = schema.get("type")
    if kind is None or schema.get("nullable") or (isinstance(kind, list) and "null" in kind):
        return []
    schema["type"] = [*(kind if isinstance(kind, list) else [kind]), "null"]
    return [f"{where}: null allowed (the example shows null)"]
