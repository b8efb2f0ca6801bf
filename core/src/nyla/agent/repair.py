"""Validation failures and the repair counters of a run (seeds: Repair-Telemetrie).

**Which failed results count as validation failures** (the agreement between the loop and
every validating tool, e.g. the feature data agent's table tools): a failed
:class:`~nyla.models.tools.ToolResult` is a validation failure when its
``error_details.code`` is in :data:`VALIDATION_FAILURE_CODES` — the dispatcher's argument
codes plus the query validator's codes — **or** when its ``data`` is a dict with
``"validationFailure": True`` (for a validator with codes of its own). The code is then
recorded as ``ToolCallLog.validation_failure_code``.

Counters, computed at the end of a run from the ordered call logs:

- ``validation_failures``: calls rejected before execution (a validation failure code).
- ``repair_attempts``: calls of a tool name in a *later round* than an unrepaired rejection
  of that same tool name.
- ``success_after_repair``: repair attempts whose result has no validation failure code
  (the rejection counts as repaired from then on).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from nyla.models.agent import CallRecord, ToolCallLog
from nyla.models.tools import ToolResult

#: Codes of the dispatcher's own argument validation.
ARGUMENT_CODES: frozenset[str] = frozenset(
    {"INVALID_JSON", "MISSING_FIELD", "UNKNOWN_FIELD", "INVALID_TYPE", "INVALID_VALUE"}
)

#: Codes of the feature query validator (seeds: QueryValidator).
QUERY_VALIDATOR_CODES: frozenset[str] = frozenset(
    {
        "FIELD_NOT_FOUND",
        "OPERATOR_INCOMPATIBLE",
        "INVALID_AGGREGATE_TARGET",
        "ORDER_BY_INVALID",
        "TYPE_MISMATCH",
        "REQUIRES_FILTER",
    }
)

VALIDATION_FAILURE_CODES: frozenset[str] = ARGUMENT_CODES | QUERY_VALIDATOR_CODES


def validation_failure_code(result: ToolResult) -> str | None:
    """The validation failure code of a result, or ``None`` when it is not one."""
    if result.success or result.error_details is None:
        return None
    code = result.error_details.code
    if code in VALIDATION_FAILURE_CODES:
        return code
    data: Any = result.data
    if isinstance(data, dict) and data.get("validationFailure") is True:
        return code
    return None


def repair_counters(logs: Iterable[ToolCallLog] | Iterable[CallRecord]) -> dict[str, int]:
    """``validation_failures``, ``repair_attempts`` and ``success_after_repair`` of a run."""
    failures = attempts = successes = 0
    pending: dict[str, int] = {}  # tool name -> round of its latest unrepaired rejection
    for log in logs:
        rejected_in = pending.get(log.tool_name)
        if rejected_in is not None and log.round > rejected_in:
            attempts += 1
            if log.validation_failure_code is None:
                successes += 1
                del pending[log.tool_name]
        if log.validation_failure_code is not None:
            failures += 1
            pending[log.tool_name] = log.round
    return {
        "validation_failures": failures,
        "repair_attempts": attempts,
        "success_after_repair": successes,
    }
