"""Typed coercion of filter values: what a model sends -> the Python value bound into SQL."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

MAX_IN_VALUES = 500
#: longest text a filter value may be (a longer one cannot match a field of a feature table)
MAX_TEXT_CHARS = 10_000
#: integers are bound as PostgreSQL bigint
MIN_INTEGER, MAX_INTEGER = -(2**63), 2**63 - 1
#: decimal exponents a number may have (PostgreSQL numeric overflows far beyond)
MAX_NUMBER_EXPONENT = 100
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]{1,19}")
_EXAMPLES = {
    "string": '"text"',
    "integer": "42",
    "number": "1234.50",
    "boolean": "true",
    "date": '"2025-03-31"',
    "datetime": '"2025-03-31T12:00:00"',
}


class ValueTypeError(ValueError):
    """A filter value that does not fit the field's type; ``example`` shows one that does."""

    def __init__(self, message: str, field_type: str) -> None:
        super().__init__(message)
        self.example = _EXAMPLES.get(field_type)


def coerce_scalar(field_type: str, value: Any) -> Any:
    """``value`` as the Python type of ``field_type``, or :class:`ValueTypeError`."""
    if value is None:
        raise ValueTypeError("a value is required (use is_null to test for NULL)", field_type)
    if isinstance(value, list | dict):
        raise ValueTypeError(f"expected one {field_type}, got {type(value).__name__}", field_type)
    coerce = _COERCERS.get(field_type)
    if coerce is None:
        raise ValueTypeError(f"unsupported field type {field_type!r}", field_type)
    return coerce(value)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        raise ValueTypeError("expected text, got a boolean", "string")
    try:
        text = str(value)
    except ValueError:
        raise ValueTypeError("expected text, got a number too long to show", "string") from None
    if "\x00" in text:
        raise ValueTypeError("text must not contain NUL characters", "string")
    if len(text) > MAX_TEXT_CHARS:
        raise ValueTypeError(f"text longer than {MAX_TEXT_CHARS} characters", "string")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueTypeError("text must be valid Unicode (a lone surrogate)", "string") from None
    return text


def _integer(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueTypeError("expected an integer, got a boolean", "integer")
    number: int | None = None
    if isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and _INTEGER_TEXT.fullmatch(value.strip()):
        number = int(value.strip())
    if number is None:
        raise ValueTypeError(f"expected an integer, got {_short(value)}", "integer")
    if not MIN_INTEGER <= number <= MAX_INTEGER:
        raise ValueTypeError("integer out of range (64-bit)", "integer")
    return number


def _number(value: Any) -> Decimal:
    if isinstance(value, bool):
        raise ValueTypeError("expected a number, got a boolean", "number")
    try:
        number = Decimal(str(value).strip().replace("'", ""))
    except (InvalidOperation, ValueError):
        raise ValueTypeError(f"expected a number, got {_short(value)}", "number") from None
    if not number.is_finite() or (isinstance(value, float) and not math.isfinite(value)):
        raise ValueTypeError("expected a finite number", "number")
    if number and abs(number.adjusted()) > MAX_NUMBER_EXPONENT:
        raise ValueTypeError(
            f"number out of range (|x| between 1e-{MAX_NUMBER_EXPONENT} and "
            f"1e{MAX_NUMBER_EXPONENT})",
            "number",
        )
    return number


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueTypeError(f"expected true or false, got {_short(value)}", "boolean")


def _date(value: Any) -> date:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value).strip()[:10])
    except ValueError:
        raise ValueTypeError(f"expected a date YYYY-MM-DD, got {_short(value)}", "date") from None


def _datetime(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value
    try:
        return datetime.fromisoformat(str(value).strip())
    except ValueError:
        raise ValueTypeError(
            f"expected an ISO date-time, got {_short(value)}", "datetime"
        ) from None


#: field type -> the function that coerces one value to it
_COERCERS: dict[str, Callable[[Any], Any]] = {
    "string": _text,
    "integer": _integer,
    "number": _number,
    "boolean": _boolean,
    "date": _date,
    "datetime": _datetime,
}


def _short(value: Any) -> str:
    """A short repr of what the model sent (never raises: a 5000-digit int has none)."""
    try:
        text = repr(value)
    except ValueError:
        return f"a {type(value).__name__} too long to show"
    return text if len(text) <= 60 else text[:60] + "..."


def coerce_filter_value(field_type: str, op: str, value: Any) -> Any:
    """The bound value(s) for operator ``op``: ``None`` for is_null/not_null, a pair for
    between, a list for in/not_in, else one scalar."""
    if op in ("is_null", "not_null"):
        return None
    if op == "between":
        if not isinstance(value, list | tuple) or len(value) != 2:
            raise ValueTypeError("between needs a list [from, to]", field_type)
        return (coerce_scalar(field_type, value[0]), coerce_scalar(field_type, value[1]))
    if op in ("in", "not_in"):
        if isinstance(value, str | int | float | Decimal) and not isinstance(value, bool):
            value = [value]
        if not isinstance(value, list | tuple) or not value:
            raise ValueTypeError(f"{op} needs a non-empty list", field_type)
        if len(value) > MAX_IN_VALUES:
            raise ValueTypeError(f"{op} takes at most {MAX_IN_VALUES} values", field_type)
        return [coerce_scalar(field_type, v) for v in value]
    scalar = coerce_scalar(field_type, value)
    if op in ("like", "ilike", "not_like"):
        trailing = len(scalar) - len(scalar.rstrip("\\"))
        if trailing % 2:
            raise ValueTypeError(
                "a LIKE pattern must not end with a lone backslash (escape it as \\\\)",
                field_type,
            )
    return scalar
