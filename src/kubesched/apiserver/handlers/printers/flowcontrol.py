"""The Table columns of flowcontrol.apiserver.k8s.io (FlowSchemas, PriorityLevelConfigurations),
as ``pkg/printers/internalversion/printers.go`` prints them."""

from __future__ import annotations

from typing import Any

from kubesched.apiserver.handlers.printers.common import Printer, Row, age, col, name_col


def _flow_schema_row(o: dict[str, Any], now: float) -> Row:
    """``printFlowSchema``: MissingPL is the Dangling condition's status, ``?`` before the
    controller wrote one."""
    meta, spec = o.get("metadata") or {}, o.get("spec") or {}
    method = spec.get("distinguisherMethod")
    missing = next(
        (c.get("status") for c in (o.get("status") or {}).get("conditions") or [] if c.get("type") == "Dangling"),
        "?",
    )
    return [
        meta.get("name"),
        (spec.get("priorityLevelConfiguration") or {}).get("name", ""),
        int(spec.get("matchingPrecedence") or 0),
        method.get("type", "") if isinstance(method, dict) else "<none>",
        age(now, meta.get("creationTimestamp")),
        missing,
    ]


def _priority_level_row(o: dict[str, Any], now: float) -> Row:
    """``printPriorityLevelConfiguration``: the limited level's shares and queuing, else ``<none>``."""
    meta, spec = o.get("metadata") or {}, o.get("spec") or {}
    cells: list[Any] = ["<none>"] * 4
    limited = spec.get("limited")
    if isinstance(limited, dict):
        cells[0] = limited.get("nominalConcurrencyShares")
        queuing = (limited.get("limitResponse") or {}).get("queuing")
        if isinstance(queuing, dict):
            cells[1:] = [queuing.get("queues"), queuing.get("handSize"), queuing.get("queueLengthLimit")]
    return [meta.get("name"), spec.get("type", ""), *cells, age(now, meta.get("creationTimestamp"))]


PRINTERS: dict[str, Printer] = {
    "FlowSchema": (
        [
            name_col(),
            col("PriorityLevel"),
            col("MatchingPrecedence"),
            col("DistinguisherMethod"),
            col("Age"),
            col("MissingPL", description="references a broken or non-existent PriorityLevelConfiguration"),
        ],
        _flow_schema_row,
    ),
    "PriorityLevelConfiguration": (
        [
            name_col(),
            col("Type"),
            col("NominalConcurrencyShares"),
            col("Queues"),
            col("HandSize"),
            col("QueueLengthLimit"),
            col("Age"),
        ],
        _priority_level_row,
    ),
}


def _precedence_then_name(o: dict[str, Any]) -> tuple[int, str]:
    """``FlowSchemaSequence``: lower matching precedence first, ties by name."""
    return (int((o.get("spec") or {}).get("matchingPrecedence") or 0), str((o.get("metadata") or {}).get("name")))


ORDERS = {"FlowSchema": _precedence_then_name}
