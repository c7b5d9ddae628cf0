"""cel-go's ``string.format`` and ``strings.quote`` as Kubernetes' environment has them
(``ext.Strings(ext.StringsVersion(2))``: ``ext/formatting.go``'s first formatter, locale en_US),
and the check its ``stringFormatValidator`` makes when a rule is compiled: a literal format string
given a list literal is parsed then, each clause against its argument's type."""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from kubesched.errors import GO_ESCAPES, go_quote


class FormatError(Exception):
    """A format string or argument cel-go refuses, in its words."""


DEFAULT_PRECISION = 6  # ext/strings.go's defaultPrecision
# cel-go before strings version 5 bounds no precision; a precision of a billion would hold the
# server while it prints. Longer than any formatted value needs, and refused in cel-go's words
MAX_PRECISION = 1_000


def type_name(value: Any) -> str:
    """A runtime value's CEL type name, as the messages name it."""
    for python, name in _TYPE_NAMES:
        if isinstance(value, python):
            return name
    return type(value).__name__


# the Python type each CEL type is carried in, bool before int (a bool is an int in Python)
_TYPE_NAMES: tuple[tuple[type, str], ...] = (
    (type(None), "null_type"),
    (bool, "bool"),
    (int, "int"),
    (float, "double"),
    (str, "string"),
    (bytes, "bytes"),
    (list, "list"),
    (dict, "map"),
    (datetime.datetime, "google.protobuf.Timestamp"),
    (datetime.timedelta, "google.protobuf.Duration"),
)


# -- Go's fmt, as the formatter calls it ---------------------------------------------------------


def _special(x: float) -> str | None:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    return None


def go_g(x: float) -> str:
    """Go's ``%g`` of a float64: the shortest digits that read back as ``x``, in ``%e`` form when
    the exponent is under -4 or at least 6 (``strconv.formatDigits``)."""
    special = _special(x)
    if special is not None:
        return special
    if x == 0:
        return "-0" if math.copysign(1.0, x) < 0 else "0"
    sign, digits, exponent = Decimal(repr(x)).normalize().as_tuple()
    text = "".join(map(str, digits))
    assert isinstance(exponent, int)
    point = len(text) + exponent  # where the decimal point falls after the digits' first
    neg = "-" if sign else ""
    exp = point - 1
    if exp < -4 or exp >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{neg}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{neg}0.{'0' * -point}{text}"
    if point >= len(text):
        return f"{neg}{text}{'0' * (point - len(text))}"
    return f"{neg}{text[:point]}.{text[point:]}"


def _fixed(x: float, precision: int) -> str:
    special = _special(x)
    return special if special is not None else f"{x:.{precision}f}"


def _grouped(text: str) -> str:
    """A number as golang.org/x/text/message prints it for en-US: its whole part in groups of
    three, and infinity as the sign."""
    if text in ("+Inf", "-Inf"):
        return "∞" if text == "+Inf" else "-∞"
    neg = text.startswith("-")
    whole, dot, rest = text.lstrip("-").partition(".")
    if whole.isdigit():
        whole = f"{int(whole):,}"
    return ("-" if neg else "") + whole + dot + rest


# -- the clauses (ext/formatting.go's stringFormatter) -------------------------------------------

_COMPLAINTS = {
    "s": "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, "
    "durations, and timestamps",
    "d": "decimal clause can only be used on integers",
    "f": "fixed-point clause can only be used on doubles",
    "e": "scientific clause can only be used on doubles",
    "b": "only integers and bools can be formatted as binary",
    "x": "only integers, byte buffers, and strings can be formatted as hex",
    "X": "only integers, byte buffers, and strings can be formatted as hex",
    "o": "octal clause can only be used on integers",
}


def complaint(letter: str, given: str) -> str:
    """What a clause says of an argument of type ``given`` (ext/formatting.go's error helpers)."""
    return f"{_COMPLAINTS[letter]}, was given {given}"


def _as_string(value: Any) -> str:
    """``%s`` (``FormatString``)."""
    if isinstance(value, list):
        return "[" + ", ".join(_in_aggregate(v) for v in value) + "]"
    if isinstance(value, dict):
        pairs = []
        for k, v in value.items():
            if isinstance(k, bool | str):
                key = go_quote(k) if isinstance(k, str) else ("true" if k else "false")
            elif isinstance(k, int):
                key = str(k)
            else:
                raise FormatError(f"no formatting function for map key of type {type_name(k)}")
            pairs.append((key, _in_aggregate(v)))
        pairs.sort(key=lambda p: p[0])
        return "{" + ", ".join(f"{k}:{v}" for k, v in pairs) + "}"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_g(value)
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, datetime.datetime):
        return _rfc3339(value)
    if isinstance(value, datetime.timedelta):
        return _seconds(value)
    raise FormatError(complaint("s", type_name(value)))


def _in_aggregate(value: Any) -> str:
    """A list's element or a map's value as ``%s`` shows it: quoted as a CEL literal."""
    if isinstance(value, float):
        shown = _fixed(value, DEFAULT_PRECISION)
        return go_quote(shown) if _special(value) is not None else shown
    if isinstance(value, datetime.datetime):
        return f"timestamp({go_quote(_rfc3339(value))})"
    if isinstance(value, datetime.timedelta):
        return f"duration({go_quote(_seconds(value))})"
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, bytes):
        return "b" + go_quote(value.decode("utf-8", "replace"))
    return _as_string(value)


def _rfc3339(t: datetime.datetime) -> str:
    t = t.astimezone(datetime.UTC) if t.tzinfo else t
    frac = f".{t.microsecond:06d}".rstrip("0") if t.microsecond else ""
    return t.strftime("%Y-%m-%dT%H:%M:%S") + frac + "Z"


def _seconds(d: datetime.timedelta) -> str:
    return f"{format(Decimal(d.days * 86400 + d.seconds) + Decimal(d.microseconds) / 10**6, 'f')}s".replace(
        ".000000s", "s"
    )


def _decimal(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise FormatError(complaint("d", type_name(value)))


def _float_arg(value: Any, letter: str) -> float:
    if isinstance(value, str) and value in ("NaN", "Infinity", "-Infinity"):
        return float(value.replace("Infinity", "inf"))
    if isinstance(value, float):
        return value
    raise FormatError(complaint(letter, type_name(value)))


def _fixed_clause(precision: int | None) -> Callable[[Any], str]:
    def clause(value: Any) -> str:
        return _grouped(_fixed(_float_arg(value, "f"), DEFAULT_PRECISION if precision is None else precision))

    return clause


def _scientific_clause(value: Any) -> str:
    """``%e``: the formatter prints with ``%<precision>e`` through golang.org/x/text/message for
    en-US, so the precision is a width of six (Go's default precision stays) and the exponent is
    written as a power of ten in superscript digits (``1.234500×10⁰³``)."""
    x = _float_arg(value, "e")
    special = _special(x)
    if special is not None:
        shown = _grouped(special) if special != "NaN" else special
    else:
        mantissa, _, exponent = f"{x:e}".partition("e")
        power = int(exponent)
        digits = f"{abs(power):02d}".translate(_SUPERSCRIPT)
        shown = f"{mantissa}×10{'⁻' if power < 0 else ''}{digits}"
    return shown.rjust(6)


_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def _binary(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return format(value, "b")
    raise FormatError(complaint("b", type_name(value)))


def _hex(upper: bool) -> Callable[[Any], str]:
    def clause(value: Any) -> str:
        if isinstance(value, str | bytes):
            raw = value.encode() if isinstance(value, str) else value
            out = raw.hex()
        elif isinstance(value, int) and not isinstance(value, bool):
            out = format(value, "x")
        else:
            raise FormatError(complaint("x", type_name(value)))
        return out.upper() if upper else out

    return clause


def _octal(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return format(value, "o")
    raise FormatError(complaint("o", type_name(value)))


# -- the format string (parseFormatString) -------------------------------------------------------

# which argument types each clause takes, for the check at compile time (stringFormatChecker)
CLAUSE_TYPES = {
    "d": ("int", "uint"),
    "f": ("double", "string"),
    "e": ("double", "string"),
    "b": ("int", "uint", "bool"),
    "x": ("int", "uint", "string", "bytes"),
    "X": ("int", "uint", "string", "bytes"),
    "o": ("int", "uint"),
}


def clauses(text: str) -> list[tuple[str, int | None]]:
    """The clauses of a format string in order (``%%`` is none) with their precision, or
    FormatError in cel-go's words where the string cannot be parsed."""
    return [(letter, precision) for _at, _end, letter, precision in _parsed(text, None, bounded=False)]


def _parsed(text: str, size: int | None, bounded: bool = True) -> Any:
    """Each clause of ``text``: where it starts and ends (in its UTF-8 bytes, as cel-go reads
    it), its letter and its precision. ``size``, the number of arguments, is checked clause by
    clause as cel-go checks it (None at compile time, where the check counts them after). A
    precision over MAX_PRECISION is refused when the string is formatted, not when it is checked
    (cel-go v0.29 bounds none)."""
    raw = text.encode()
    i, index = 0, 0
    while i < len(raw):
        if raw[i] != 0x25:  # %
            i += 1
            continue
        if i + 1 < len(raw) and raw[i + 1] == 0x25:
            i += 2
            continue
        if size is not None and index >= size:
            raise FormatError(f"index {index} out of range")
        if i + 1 >= len(raw):
            raise FormatError("unexpected end of string")
        j = i + 1
        precision: int | None = None
        if raw[j] == 0x2E:  # .
            j += 1
            start = j
            while j < len(raw) and 0x30 <= raw[j] <= 0x39:
                j += 1
            if j >= len(raw):
                raise FormatError(_PRECISION + "could not find end of precision specifier")
            if start == j:
                raise FormatError(
                    _PRECISION + 'error while converting precision to integer: strconv.Atoi: parsing "": invalid syntax'
                )
            precision = int(raw[start:j])
            if bounded and precision > MAX_PRECISION:
                shown = f"precision {precision} exceeds maximum allowed precision {MAX_PRECISION}"
                raise FormatError(_PRECISION + shown)
        letter = chr(raw[j])
        if letter not in "sdfebxXo":
            raise FormatError(f'could not parse formatting clause: unrecognized formatting clause "{letter}"')
        yield i, j + 1, letter, precision
        index += 1
        i = j + 1


_PRECISION = "could not parse formatting clause: error while parsing precision: "


def string_format(text: str, args: list[Any]) -> str:
    """``<string>.format(<list>)``."""
    if not isinstance(text, str) or not isinstance(args, list):
        raise TypeError("no such overload")
    raw = text.encode()
    out: list[str] = []
    at = 0
    for index, (start, end, letter, precision) in enumerate(_parsed(text, len(args))):
        out.append(raw[at:start].decode("utf-8", "replace").replace("%%", "%"))
        try:
            out.append(_clause(letter, precision)(args[index]))
        except FormatError as exc:
            raise FormatError(f"error during formatting: {exc}") from None
        at = end
    out.append(raw[at:].decode("utf-8", "replace").replace("%%", "%"))
    return "".join(out)


def _clause(letter: str, precision: int | None) -> Callable[[Any], str]:
    if letter == "s":
        return _as_string
    if letter == "d":
        return _decimal
    if letter == "f":
        return _fixed_clause(precision)
    if letter == "e":
        return _scientific_clause
    if letter == "b":
        return _binary
    if letter == "o":
        return _octal
    return _hex(letter == "X")


def quote(s: str) -> str:
    """``strings.quote``: the string in double quotes with CEL's escapes."""
    if not isinstance(s, str):
        raise TypeError("no such overload")
    return '"' + "".join(GO_ESCAPES.get(ch, ch) for ch in s) + '"'
