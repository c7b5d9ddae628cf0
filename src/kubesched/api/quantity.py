"""Kubernetes resource quantities (apimachinery ``resource.Quantity``), parsed exactly.

The grammar follows ``k8s.io/apimachinery/pkg/api/resource/quantity.go``: a signed decimal
number followed by a binary-SI suffix (Ki…Ei), a decimal-SI suffix (n u m "" k M G T P E) or
a decimal exponent (``e3``, ``E-2``). Values are kept as exact fractions; ``milli_value`` and
``value`` round up like ``Quantity.MilliValue()`` / ``Quantity.Value()``.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction

__all__ = ["QuantityError", "canonical", "milli_value", "parse_quantity", "value"]

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_NUMBER = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(.*)$")
_EXPONENT = re.compile(r"^[eE]([+-]?[0-9]+)$")

_cache: dict[str, Fraction] = {}


class QuantityError(ValueError):
    """A string that is not a valid Kubernetes quantity."""


def parse_quantity(text: str | int | float) -> Fraction:
    """Parse a quantity such as ``500m``, ``1.5Gi``, ``129e6`` or ``2k`` into an exact Fraction."""
    if isinstance(text, bool):
        raise QuantityError(f"quantities must match the regular expression, got {text!r}")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        if not math.isfinite(text):  # YAML's .inf and .nan have no JSON form
            raise QuantityError(f"quantities must be finite numbers, got {text!r}")
        return Fraction(str(text))
    cached = _cache.get(text)
    if cached is not None:
        return cached
    match = _NUMBER.match(text.strip()) if isinstance(text, str) else None
    if match is None or text != text.strip():
        raise QuantityError(
            f"quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$', got {text!r}"
        )
    number, suffix = match.groups()
    if suffix in _BINARY:
        result = _decimal(number, 0) * _BINARY[suffix]
    elif suffix in _DECIMAL:
        result = _decimal(number, 0) * _DECIMAL[suffix]
    else:
        exp = _EXPONENT.match(suffix)
        if exp is None:
            raise QuantityError(f"unable to parse quantity's suffix {suffix!r} in {text!r}")
        result = _decimal(number, _exponent(exp.group(1)))
    if len(_cache) < 65536:
        _cache[text] = result
    return result


# Quantities are exact within what any counter can hold and held at its edges beyond, so that no
# text costs more than its length to read: ``1e9999999`` would be a ten-million-digit integer.
# upstream keeps such values in an inf.Dec (quantity.go) and spends seconds on them; everything
# here rounds up to nano units and compares against 64-bit bounds, which these edges keep.
_MAGNITUDE = 40  # |value| is held within [10**-40, 10**40]
_SIGNIFICANT = 45  # digits kept (the largest int64 count of nano units needs 28)


def _exponent(text: str) -> int:
    """A decimal exponent, held within what ``_decimal`` can tell apart (``e`` and a million digits
    is read in constant time, not as a million-digit integer)."""
    digits = text.lstrip("+-").lstrip("0")
    if len(digits) > 6:
        return -(10**6) if text.startswith("-") else 10**6
    return int(text)


def _decimal(number: str, exp10: int) -> Fraction:
    """``number`` x 10**``exp10`` exactly, but held at 10**±_MAGNITUDE beyond it and with digits
    past the _SIGNIFICANT-th rounded up away from zero (the direction ``Quantity`` rounds)."""
    negative = number.startswith("-")
    whole, _, frac = number.lstrip("+-").partition(".")
    digits = (whole + frac).lstrip("0")
    if not digits:
        return Fraction(0)
    scale = exp10 - len(frac)  # value = int(digits) * 10**scale
    magnitude = len(digits) + scale  # the value has this many digits before the point
    if magnitude > _MAGNITUDE:
        out = Fraction(10**_MAGNITUDE)
    elif magnitude < -_MAGNITUDE:
        out = Fraction(1, 10**_MAGNITUDE)
    else:
        kept = int(digits[:_SIGNIFICANT])
        if len(digits) > _SIGNIFICANT:
            scale += len(digits) - _SIGNIFICANT
            kept += digits[_SIGNIFICANT:].strip("0") != ""
        out = Fraction(kept * 10**scale) if scale >= 0 else Fraction(kept, 10**-scale)
    return -out if negative else out


@functools.lru_cache(maxsize=65536)
def milli_value(text: str | int | float) -> int:
    """``Quantity.MilliValue()``: thousandths, rounded up (``0.1m`` → 1)."""
    return math.ceil(parse_quantity(text) * 1000)


@functools.lru_cache(maxsize=65536)
def value(text: str | int | float) -> int:
    """``Quantity.Value()``: whole units, rounded up."""
    return math.ceil(parse_quantity(text))


_SI_SUFFIXES = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


def canonical(text: str | int | float) -> str:
    """``Quantity.String()``: the canonical form in the format the text was written in (binary SI
    for ``Ki``…``Ei``, decimal exponent for ``e``/``E``, decimal SI otherwise); a binary quantity
    under 1024 or not a whole number prints in decimal SI, as ``CanonicalizeBytes`` does. Values
    are rounded up to nano units, the finest a Quantity keeps."""
    q = parse_quantity(text)
    raw = str(text).strip()
    if abs(q) >= 10**_MAGNITUDE:  # held at the edge (``_decimal``): shown as written, as upstream keeps it
        return raw
    written = _NUMBER.match(raw) if isinstance(text, str) else None
    suffix = written.group(2) if written else ""
    nano = math.ceil(q * 10**9)
    if nano == 0:
        return "0"
    if (suffix in _BINARY and -1024 < q < 1024) or (suffix in _BINARY and q.denominator != 1):
        suffix = ""
    if suffix in _BINARY:
        n, i = int(q), 0
        while n % 1024 == 0 and i < len(_BINARY_SUFFIXES) - 1:
            n //= 1024
            i += 1
        return f"{n}{_BINARY_SUFFIXES[i]}"
    exponent = -9
    mantissa = nano
    while mantissa % 1000 == 0 and exponent < 18:
        mantissa //= 1000
        exponent += 3
    if _EXPONENT.match(suffix):
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    return f"{mantissa}{_SI_SUFFIXES[exponent]}"
