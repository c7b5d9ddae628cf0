"""``meta.k8s.io/v1`` Table responses with the columns of upstream's printers
(``pkg/printers/internalversion/printers.go``, one module per API group in ``printers/``),
rendered on the server as kube-apiserver does."""

from __future__ import annotations

from typing import Any

from kubesched.apiserver.handlers.printers import core, flowcontrol, networking, scheduling, storage, workloads
from kubesched.apiserver.handlers.printers.common import Printer, Row, col, default_row, human_duration, name_col

__all__ = ["PRINTERS", "Printer", "Row", "human_duration", "table"]

PRINTERS: dict[str, Printer] = {
    **core.PRINTERS,
    **workloads.PRINTERS,
    **networking.PRINTERS,
    **storage.PRINTERS,
    **scheduling.PRINTERS,
    **flowcontrol.PRINTERS,
}
# kinds whose list printer sorts the rows (printFlowSchemaList: by matching precedence, then name)
ORDERS = {**flowcontrol.ORDERS}
_DEFAULT: Printer = ([name_col(), col("Created At", type_="date")], default_row)


def table(
    kind: str,
    objects: list[dict[str, Any]],
    now: float,
    resource_version: str | None,
    continue_token: str | None = None,
    headers: bool = True,
    include: str | None = None,
    printer: Printer | None = None,
) -> dict[str, Any]:
    """A Table of ``objects``; ``include`` is the request's includeObject: Metadata (the
    default: PartialObjectMetadata), Object (the whole object: what ``kubectl get --sort-by``
    sorts by) or None; ``printer``: the columns and row renderer of a kind not built in (a
    custom resource's printer columns)."""
    columns, render = printer or PRINTERS.get(kind, _DEFAULT)
    meta: dict[str, Any] = {}
    if resource_version is not None:
        meta["resourceVersion"] = resource_version
    if continue_token:
        meta["continue"] = continue_token

    def embedded(o: dict[str, Any]) -> dict[str, Any] | None:
        if include == "Object":
            return o
        if include == "None":
            return None
        return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o.get("metadata") or {}}

    order = ORDERS.get(kind) if printer is None else None
    if order is not None:
        objects = sorted(objects, key=order)
    rows = [{"cells": render(o, now), "object": embedded(o)} for o in objects]
    out: dict[str, Any] = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "rows": rows}
    if headers:
        out["columnDefinitions"] = columns
    else:
        out["columnDefinitions"] = None
    return out
