"""apimachinery's ``util/intstr``: an IntOrString scaled against a total."""

from __future__ import annotations

from typing import Any


def scaled_value(value: Any, total: int, *, round_up: bool) -> int:
    """``GetScaledValueFromIntOrPercent``: an integer as it is, a percentage of ``total`` rounded
    up or down (in integers: no float error at 100%)."""
    if isinstance(value, str) and value.endswith("%"):
        exact = int(value[:-1]) * total
        return -(-exact // 100) if round_up else exact // 100
    return int(value or 0)
