"""Consumable device capacity (DRAConsumableCapacity, beta and on since v1.36;
``structured/internal/incubating/consumable_capacity.go``): a device with
``allowMultipleAllocations`` is shared by several requests, each consuming part of its
``capacity``, rounded up to what the device's ``requestPolicy`` allows (a default, a list of valid
values, or a range with a step; with DRAFractionalCapacityRange, in milli units where every bound
is whole in them, else in whole units rounded up). A request naming a capacity the device lacks
never fits it."""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from kubesched.api.quantity import QuantityError, parse_quantity

_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
_DECIMAL = (("E", 10**18), ("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3))
# shareIDs are upstream's random UIDs; kubesched derives them from the claim, request and device
# so that a simulation gives the same claims every run
_SHARE_NAMESPACE = uuid.UUID("7f2b1c9e-4a5d-4c3b-9e8f-1a2b3c4d5e6f")


@dataclass(frozen=True, slots=True)
class Capacity:
    """One ``capacity`` entry of a device: its value and request policy."""

    value: Fraction
    default: Fraction | None = None
    valid_values: tuple[Fraction, ...] = ()
    minimum: Fraction | None = None
    maximum: Fraction | None = None
    step: Fraction | None = None
    binary: bool = False  # how its quantities print (the step's, else the value's format)


def _q(raw: Any) -> Fraction | None:
    if raw is None:
        return None
    try:
        return parse_quantity(raw)
    except QuantityError:
        return None


def _binary(raw: Any) -> bool:
    return isinstance(raw, str) and raw.rstrip("0123456789.").endswith("i")


def device_capacity(device: Mapping[str, Any]) -> dict[str, Capacity]:
    """A device's ``capacity`` with its request policies."""
    out: dict[str, Capacity] = {}
    for name, raw in (device.get("capacity") or {}).items():
        if not isinstance(raw, Mapping):
            continue
        value = _q(raw.get("value"))
        if value is None:
            continue
        policy = raw.get("requestPolicy") or {}
        rng = policy.get("validRange") or {}
        out[str(name)] = Capacity(
            value,
            _q(policy.get("default")),
            tuple(v for v in (_q(x) for x in policy.get("validValues") or []) if v is not None),
            _q(rng.get("min")),
            _q(rng.get("max")),
            _q(rng.get("step")),
            _binary(rng.get("step") or raw.get("value")),
        )
    return out


def request_capacity(body: Mapping[str, Any]) -> dict[str, Fraction]:
    """An exact request's ``capacity.requests``."""
    out = {}
    for name, raw in ((body.get("capacity") or {}).get("requests") or {}).items():
        q = _q(raw)
        if q is not None:
            out[str(name)] = q
    return out


def _milli_exact(q: Fraction) -> bool:
    return (q * 1000).denominator == 1


def _use_milli(cap: Capacity, fractional: bool) -> bool:
    """``useMilli``: fractional ranges on, every bound whole in milli units, a step of 1m or more."""
    if not fractional:
        return False
    bounds = [q for q in (cap.minimum, cap.maximum, cap.step) if q is not None]
    if not all(_milli_exact(q) for q in bounds):
        return False
    return cap.step is None or cap.step * 1000 >= 1


def consumed(requested: Fraction | None, cap: Capacity, fractional: bool = False) -> Fraction:
    """``calculateConsumedCapacity``: what a request takes of one capacity."""
    if requested is None:
        return cap.default if cap.default is not None else cap.value
    if cap.minimum is not None:  # a valid range: up to its minimum, then to the next step
        if requested < cap.minimum:
            return cap.minimum
        if cap.step is None:
            return requested
        if _use_milli(cap, fractional) and _milli_exact(requested):
            unit = Fraction(1, 1000)
            req, step, low = requested / unit, cap.step / unit, cap.minimum / unit
        else:
            unit = Fraction(1)
            req, step, low = Fraction(math.ceil(requested)), Fraction(math.ceil(cap.step)), cap.minimum
        n = math.ceil((req - low) / step)
        return (low + step * n) * unit
    if cap.valid_values:
        for v in cap.valid_values:
            if requested <= v:
                return v
    return requested


def _violates(amount: Fraction, cap: Capacity, fractional: bool) -> bool:
    """``violatesPolicy``: beyond the range's maximum, off its steps, or not a valid value."""
    if cap.default is not None and amount == cap.default:
        return False
    if cap.minimum is not None or cap.maximum is not None or cap.step is not None:
        if cap.maximum is not None and amount > cap.maximum:
            return True
        if cap.step is not None and cap.minimum is not None:
            if _use_milli(cap, fractional) and _milli_exact(amount):
                off = (amount - cap.minimum) * 1000 % (cap.step * 1000)
            else:
                off = Fraction(math.ceil(amount) - math.ceil(cap.minimum)) % math.ceil(cap.step)
            return off != 0
        return False
    if cap.valid_values:
        return amount not in cap.valid_values
    return False


def fits(
    requested: Mapping[str, Fraction],
    capacity: Mapping[str, Capacity],
    in_use: Mapping[str, Fraction],
    allocating: Mapping[str, Fraction],
    fractional: bool = False,
) -> bool:
    """``CmpRequestOverCapacity``: whether the request's share fits what the device has left,
    beside what claims hold (``in_use``) and what this allocation takes already (``allocating``)."""
    if any(name not in capacity for name in requested):
        return False
    for name, cap in capacity.items():
        amount = consumed(requested.get(name), cap, fractional)
        if amount < 0 or _violates(amount, cap, fractional):
            return False
        if in_use.get(name, Fraction(0)) + allocating.get(name, Fraction(0)) + amount > cap.value:
            return False
    return True


def shares(
    requested: Mapping[str, Fraction], capacity: Mapping[str, Capacity], fractional: bool = False
) -> dict[str, Fraction]:
    """``GetConsumedCapacityFromRequest``: the share of every capacity the request takes."""
    return {name: consumed(requested.get(name), cap, fractional) for name, cap in capacity.items()}


def share_id(claim_uid: str, request: str, device: tuple[str, str, str]) -> str:
    return str(uuid.uuid5(_SHARE_NAMESPACE, "/".join((claim_uid, request, *device))))


def quantity_string(q: Fraction, binary: bool = False) -> str:
    """A quantity as the API prints it (the canonical form of its format)."""
    if q.denominator != 1:
        milli = q * 1000
        if milli.denominator == 1:
            return f"{milli.numerator}m"
        return str(float(q))
    n = q.numerator
    if n == 0:
        return "0"
    for suffix, base in _BINARY if binary else _DECIMAL:
        if n % base == 0:
            return f"{n // base}{suffix}"
    return str(n)
