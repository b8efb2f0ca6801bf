"""What a vendor documents, checked on every exchange with a fake vendor.

A connector's tests keep the part of the vendor's machine-readable API description that nyla
uses (an OpenAPI 3 subset, extracted by a script kept beside it: see
:mod:`nyla.testing.spec_extract`) in ``tests/data/spec/``. :class:`VendorSpec` loads it once
and checks each request nyla sends and each answer the fake gives:

- the request: method and path match a documented operation; every query parameter is
  documented and its value fits; required ones are there; a JSON body fits the documented
  request schema (no field the vendor does not know);
- the answer: its status is documented for the operation (or is one of the errors the vendor
  documents for every operation, ``x-vendor.errors``); a JSON body fits the documented schema
  (closed: no invented field, every type right); where the request asked for some fields
  only (``fields=``, ``$select``), the answer carries no others (:mod:`nyla.testing.spec_select`).

:meth:`VendorSpec.guard` wraps a fake's transport handler so every exchange is checked; a
mismatch raises :class:`VendorSpecError` in the test and is kept in :data:`VIOLATIONS`, so a
connector that swallows the error still fails its test (the plugin's ``conftest`` asserts
the list is empty after each test).
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import httpx
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from nyla.testing.spec_schema import strict, strict_defs
from nyla.testing.spec_select import PROJECTIONS

#: every mismatch seen since the last :func:`take_violations` (tests assert it stays empty)
VIOLATIONS: list[str] = []

Handler = Callable[[httpx.Request], Any]


class VendorSpecError(AssertionError):
    """An exchange with a fake vendor that the vendor's API description does not allow."""


def take_violations() -> list[str]:
    """The mismatches recorded so far, emptying the record."""
    found = list(VIOLATIONS)
    VIOLATIONS.clear()
    return found


@dataclass
class Param:
    """A documented query or path parameter."""

    name: str
    required: bool
    schema: dict[str, Any]
    explode: bool = True

    @property
    def is_array(self) -> bool:
        """Whether the parameter takes a list (repeated, or comma-joined when not exploded)."""
        return self.schema.get("type") == "array"

    @property
    def validator(self) -> Draft202012Validator:
        """The compiled schema (built once)."""
        if self._validator is None:
            self._validator = Draft202012Validator(self.schema)
        return self._validator

    _validator: Draft202012Validator | None = field(default=None, repr=False, compare=False)


@dataclass
class Reply:
    """A documented answer of one status: its JSON schema, if the document gives one."""

    validator: Draft202012Validator | None
    types: tuple[str, ...] = ()


@dataclass
class Operation:
    """One documented operation (method + path template)."""

    method: str
    template: str
    pattern: re.Pattern[str]
    literal: int
    path: dict[str, Param]
    query: dict[str, Param]
    body: Draft202012Validator | None
    body_types: tuple[str, ...]
    body_required: bool
    replies: dict[str, Reply]
    docs: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.method} {self.template}"


def _pattern(template: str) -> tuple[re.Pattern[str], int]:
    """A regex for a path template (``{x}`` one segment, ``{+x}`` any rest) and the count of
    its literal characters (the more literal, the more specific)."""
    out, literal, last = "", 0, 0
    for m in re.finditer(r"\{(\+?)([^}]+)\}", template):
        text = template[last : m.start()]
        out += re.escape(text)
        literal += len(text)
        name = re.sub(r"\W", "_", m.group(2))
        out += f"(?P<{name}>.+)" if m.group(1) else f"(?P<{name}>[^/]+)"
        last = m.end()
    out += re.escape(template[last:])
    return re.compile(out + "/?"), literal + len(template) - last


class VendorSpec:
    """An extracted API description and the checks of exchanges against it (module doc).

    ``prefix`` is a regex for the part of the request path before the documented paths (a
    gateway's ``/ex/jira/<cloud id>``, a version segment the document puts in its server)."""

    def __init__(self, doc: dict[str, Any], prefix: str = "") -> None:
        self.doc = doc
        self.name = doc.get("info", {}).get("title", "vendor")
        self.prefix = re.compile(prefix) if prefix else None
        self._defs = strict_defs(doc.get("components", {}).get("schemas", {}))
        vendor = doc.get("x-vendor", {})
        self.error_statuses = set(vendor.get("errors", {}).get("statuses", []))
        error_schema = vendor.get("errors", {}).get("schema")
        self.error = self._validator(error_schema) if error_schema else None
        self.projection = PROJECTIONS.get(vendor.get("projection", ""))
        self.hosts = tuple(vendor.get("hosts", []))
        self.operations = [
            op for path, item in doc["paths"].items() for op in self._ops(path, item)
        ]
        self.operations.sort(key=lambda op: -op.literal)
        #: exchanges checked so far (the figure a test run reports)
        self.validated = 0

    @classmethod
    def load(cls, path: str | Path, prefix: str = "") -> VendorSpec:
        """The spec in the JSON file ``path``, loaded and compiled once per process."""
        return _load(str(Path(path).resolve()), prefix)

    # ---- building -------------------------------------------------------------------------

    def _validator(self, schema: Any) -> Draft202012Validator:
        return Draft202012Validator({**strict(schema), "$defs": self._defs})

    def _ops(self, template: str, item: dict[str, Any]) -> list[Operation]:
        shared = item.get("parameters", [])
        ops = []
        for method, raw in item.items():
            if method == "parameters" or method.startswith("x-"):
                continue
            params = [self._param(p) for p in [*shared, *raw.get("parameters", [])]]
            pattern, literal = _pattern(template)
            body = raw.get("requestBody", {})
            content = body.get("content", {})
            schema = content.get("application/json", {}).get("schema")
            ops.append(
                Operation(
                    method=method.upper(),
                    template=template,
                    pattern=pattern,
                    literal=literal,
                    path={p.name: p for p, where in params if where == "path"},
                    query={p.name: p for p, where in params if where == "query"},
                    body=self._validator(schema) if schema is not None else None,
                    body_types=tuple(content),
                    body_required=bool(body.get("required")),
                    replies={str(k): self._reply(v) for k, v in raw.get("responses", {}).items()},
                    docs=raw.get("x-docs", ""),
                    extra={k: v for k, v in raw.items() if k.startswith("x-")},
                )
            )
        return ops

    def _param(self, raw: dict[str, Any]) -> tuple[Param, str]:
        param = Param(
            name=raw["name"],
            required=bool(raw.get("required")),
            schema=strict(raw.get("schema", {})),
            explode=raw.get("explode", raw.get("style", "form") == "form"),
        )
        return param, raw.get("in", "query")

    def _reply(self, raw: dict[str, Any]) -> Reply:
        content = raw.get("content", {})
        schema = content.get("application/json", {}).get("schema")
        usable = schema not in (None, {}) and schema != {"type": "object"}
        return Reply(self._validator(schema) if usable else None, tuple(content))

    # ---- matching -------------------------------------------------------------------------

    def match(self, method: str, path: str) -> tuple[Operation, dict[str, str]] | None:
        """The documented operation for ``method`` and the (undecoded) ``path``, with its path
        arguments; ``None`` if the document has none."""
        if self.prefix:
            path = self.prefix.sub("", path, count=1)
        for op in self.operations:
            if op.method != method:
                continue
            m = op.pattern.fullmatch(path)
            if m:
                return op, {k: unquote(v) for k, v in m.groupdict().items()}
        return None

    # ---- checking -------------------------------------------------------------------------

    def covers(self, request: httpx.Request) -> bool:
        """Whether the document describes requests to this host (``x-vendor.hosts``; a
        ``*.`` entry stands for any subdomain). File hosts and token endpoints are not."""
        host = request.url.host
        return not self.hosts or any(
            host == h or (h.startswith("*.") and host.endswith(h[1:])) for h in self.hosts
        )

    def check(self, request: httpx.Request, response: httpx.Response) -> list[str]:
        """Every way this exchange departs from the document (empty when none)."""
        self.validated += 1
        found = self.match(request.method, request.url.raw_path.decode().split("?")[0])
        if found is None:
            return [f"{request.method} {request.url.path}: no such operation in {self.name}"]
        op, args = found
        problems = _check_path(op, args) + _check_query(op, request) + _check_body(op, request)
        problems += self._check_reply(op, request, response)
        return [f"{op} ({request.url.path}): {p}" for p in problems]

    def _check_reply(
        self, op: Operation, request: httpx.Request, response: httpx.Response
    ) -> list[str]:
        status = response.status_code
        reply = op.replies.get(str(status)) or op.replies.get(f"{status // 100}XX")
        reply = reply or op.replies.get("default")
        if reply is None and not (status >= 400 and status in self.error_statuses):
            return [f"status {status} is not documented (documented: {sorted(op.replies)})"]
        body = _json_body(response)
        if body is _NO_BODY:
            return []
        if reply is not None and reply.validator is not None:
            problems = _errors(reply.validator, body, f"answer {status}")
        elif status >= 400 and self.error is not None:
            problems = _errors(self.error, body, f"error answer {status}")
        else:
            problems = []
        if self.projection and status < 300:
            problems += [f"answer {status}: {p}" for p in self.projection(op, request, body)]
        return problems

    def guard(self, handler: Handler) -> Handler:
        """``handler`` (a fake's ``MockTransport`` handler, sync or async) with every exchange
        checked: a mismatch is recorded in :data:`VIOLATIONS` and raised."""

        def checked(request: httpx.Request, response: Any) -> Any:
            if isinstance(response, httpx.Response) and self.covers(request):
                problems = self.check(request, response)
                if problems:
                    VIOLATIONS.extend(problems)
                    raise VendorSpecError("\n".join(problems))
            return response

        async def checked_async(request: httpx.Request, pending: Awaitable[Any]) -> Any:
            return checked(request, await pending)

        def guarded(request: httpx.Request) -> Any:
            response = handler(request)
            if isinstance(response, Awaitable):
                return checked_async(request, response)
            return checked(request, response)

        return guarded


#: the specs loaded in this process, by file and prefix
LOADED: dict[tuple[str, str], VendorSpec] = {}


def _load(path: str, prefix: str) -> VendorSpec:
    if (path, prefix) not in LOADED:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        LOADED[path, prefix] = VendorSpec(doc, prefix)
    return LOADED[path, prefix]


#: counts other processes reported (pytest-xdist's workers, gathered by the controller)
_REPORTED: dict[str, list[int]] = {}


def counts() -> dict[str, list[int]]:
    """Per loaded spec (``"title (file)"``): exchanges checked and operations described."""
    return {
        f"{spec.name} ({Path(path).name})": [spec.validated, len(spec.operations)]
        for (path, _), spec in LOADED.items()
    }


def add_counts(reported: dict[str, list[int]]) -> None:
    """Add another process's :func:`counts` to this one's summary."""
    for key, (validated, operations) in reported.items():
        mine = _REPORTED.setdefault(key, [0, operations])
        mine[0] += validated


def summary() -> list[str]:
    """One line per spec: how many exchanges were checked against it in this test session,
    in this process and the ones that reported to it."""
    merged = {key: list(value) for key, value in _REPORTED.items()}
    add = counts()
    for key, (validated, operations) in add.items():
        merged.setdefault(key, [0, operations])[0] += validated
    return [
        f"{key}: {validated} exchanges checked, {operations} operations described"
        for key, (validated, operations) in merged.items()
    ]


_NO_BODY = object()


def _json_body(response: httpx.Response) -> Any:
    """The answer's JSON body, or ``_NO_BODY`` (empty, not JSON, or a stream not read)."""
    if "json" not in response.headers.get("content-type", ""):
        return _NO_BODY
    try:
        content = response.read()
    except (RuntimeError, httpx.StreamConsumed):
        return _NO_BODY
    if not content:
        return _NO_BODY
    try:
        return json.loads(content)
    except ValueError:
        return _NO_BODY


def _errors(validator: Draft202012Validator, value: Any, where: str) -> list[str]:
    out = []
    for error in sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))[:5]:
        # of an anyOf (a type and its derived types), the branch that came closest says why
        error = best_match(error.context) or error if error.context else error
        out.append(f"{where} at {error.json_path}: {error.message[:300]}")
    return out


def _coerce(param: Param, values: list[str]) -> Any:
    """A query or path value as the JSON its schema describes (``None`` if it cannot be)."""
    if param.is_array:
        items = values if param.explode else [v for value in values for v in value.split(",")]
        item = Param(param.name, False, param.schema.get("items", {}))
        coerced = [_coerce(item, [v]) for v in items]
        return None if None in coerced else coerced
    value = values[-1]
    kinds = param.schema.get("type", "string")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if "integer" in kinds and re.fullmatch(r"-?\d+", value):
        return int(value)
    if "number" in kinds and re.fullmatch(r"-?\d+(\.\d+)?", value):
        return float(value)
    if "boolean" in kinds and value in ("true", "false"):
        return value == "true"
    return value if "string" in kinds or not param.schema.get("type") else None


def _fits(param: Param, values: list[str], where: str) -> list[str]:
    value = _coerce(param, values)
    if value is None:
        return [f"{where} {param.name}={values!r} is not of the documented type"]
    errors = param.validator.iter_errors(value)
    return [f"{where} {param.name}={values!r}: {e.message[:200]}" for e in errors]


def _check_path(op: Operation, args: dict[str, str]) -> list[str]:
    out = []
    for name, value in args.items():
        param = op.path.get(name) or next(
            (p for p in op.path.values() if re.sub(r"\W", "_", p.name) == name), None
        )
        if param is not None:
            out += _fits(param, [value], "path parameter")
    return out


def _check_query(op: Operation, request: httpx.Request) -> list[str]:
    given: dict[str, list[str]] = {}
    for name, value in request.url.params.multi_items():
        given.setdefault(name, []).append(value)
    out = []
    for name, values in given.items():
        param = op.query.get(name)
        if param is None and name.endswith("[]"):
            # ClickUp documents array filters by their bare name and sends them as name[]
            param = op.query.get(name[:-2])
        if param is None:
            out.append(f"query parameter {name!r} is not documented")
            continue
        out += _fits(param, values, "query parameter")
    for name, param in op.query.items():
        if param.required and name not in given and f"{name}[]" not in given:
            out.append(f"required query parameter {name!r} is missing")
    return out


def _check_body(op: Operation, request: httpx.Request) -> list[str]:
    content = request.content
    if not content:
        return ["the required request body is missing"] if op.body_required else []
    kind = request.headers.get("content-type", "").split(";")[0].strip()
    if not op.body_types:
        return [f"a request body ({kind}) where the operation takes none"]
    if not any(_media_fits(kind, t) for t in op.body_types):
        return [f"request body of type {kind!r}; documented: {list(op.body_types)}"]
    if "json" not in kind or op.body is None:
        return []
    return _errors(op.body, json.loads(content), "request body")


def _media_fits(kind: str, documented: str) -> bool:
    if documented in ("*/*", kind):
        return True
    major, _, minor = documented.partition("/")
    return minor == "*" and kind.startswith(major + "/")
