"""What every printer shares (``pkg/printers/internalversion/printers.go``): a row's cells,
columns, ages as ``duration.HumanDuration`` words them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesched.clock import parse_rfc3339

Row = list[Any]
Printer = tuple[list[dict[str, Any]], Callable[[dict[str, Any], float], Row]]


def human_duration(seconds: float) -> str:
    """apimachinery ``duration.HumanDuration``."""
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = m // 60
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    if h < 24 * 8:
        return f"{h // 24}d{h % 24}h" if h % 24 else f"{h // 24}d"
    if h < 24 * 365 * 2:
        return f"{h // 24}d"
    if h < 24 * 365 * 8:
        d = h // 24
        return f"{d // 365}y{d % 365}d" if d % 365 else f"{d // 365}y"
    return f"{h // 24 // 365}y"


def age(now: float, stamp: str | None) -> str:
    if not stamp:
        return "<unknown>"
    try:
        return human_duration(now - parse_rfc3339(stamp))
    except ValueError:
        return "<unknown>"


def col(name: str, priority: int = 0, type_: str = "string", fmt: str = "", description: str = "") -> dict[str, Any]:
    return {"name": name, "type": type_, "format": fmt, "description": description or name, "priority": priority}


def name_col() -> dict[str, Any]:
    return col("Name", fmt="name", description="Name must be unique within a namespace.")


def containers_images(o: dict[str, Any]) -> tuple[str, str]:
    """``layoutContainerCells``: the template's container names and images."""
    containers = ((((o.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers")) or []
    return ",".join(str(c.get("name", "")) for c in containers), ",".join(str(c.get("image", "")) for c in containers)


def n(o: dict[str, Any], field: str) -> int:
    return int((o.get("status") or {}).get(field) or 0)


def default_row(o: dict[str, Any], now: float) -> Row:
    meta = o.get("metadata") or {}
    return [meta.get("name"), meta.get("creationTimestamp")]
