"""The functions kube-apiserver's CEL environment adds for CRD rules, at run time: cel-go's string
extensions (``ext.Strings``: ``split``, ``substring``, ``lowerAscii``...) and Kubernetes' libraries
(``apiserver/pkg/cel/library``: lists, regex, URLs, IPs and CIDRs, quantities), each a function the
runtime calls with a member call's target first. An IP, CIDR, URL or quantity is carried as a map
with one key naming its kind, so values of one kind compare equal as upstream's do."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from fractions import Fraction
from typing import Any
from urllib.parse import parse_qs, urlsplit

import cel as rust_cel
from kubesched.api.quantity import QuantityError, parse_quantity
from kubesched.apiextensions.cel import named_formats, semver
from kubesched.apiextensions.cel.formatting import FormatError, quote, string_format, type_name


class LibraryError(Exception):
    """An evaluation error a library function raises, worded as upstream's."""


# -- strings (cel-go ext/strings.go) ------------------------------------------------------------


def _check_index(i: int, size: int) -> None:
    if i < 0 or i > size:
        raise LibraryError(f"index out of range: {i}")


def char_at(s: str, i: int) -> str:
    _check_index(i, len(s))
    return s[i] if i < len(s) else ""


def index_of(target: Any, x: Any, offset: int = 0) -> int:
    if isinstance(target, list):  # the lists library's indexOf
        return next((i for i, v in enumerate(target) if v == x), -1)
    _check_index(offset, len(target))
    return target.find(x, offset)


def last_index_of(target: Any, x: Any, offset: int | None = None) -> int:
    if isinstance(target, list):
        return next((i for i in range(len(target) - 1, -1, -1) if target[i] == x), -1)
    if offset is None:
        return target.rfind(x)
    _check_index(offset, len(target))
    return target.rfind(x, 0, offset + len(x))


def _ascii(s: str, upper: bool) -> str:
    return "".join((c.upper() if upper else c.lower()) if c.isascii() else c for c in s)


def replace(s: str, old: str, new: str, n: int = -1) -> str:
    return s.replace(old, new, n)


def split(s: str, sep: str, n: int = -1) -> list[str]:
    if n == 0:
        return []
    if sep == "":
        parts = list(s)
        return parts if n < 0 or n >= len(parts) else [*parts[: n - 1], "".join(parts[n - 1 :])]
    return s.split(sep, n - 1 if n > 0 else -1)


def substring(s: str, start: int, end: int | None = None) -> str:
    stop = len(s) if end is None else end
    if start < 0 or start > len(s):
        raise LibraryError(f"index out of range: {start}")
    if stop < 0 or stop > len(s):
        raise LibraryError(f"index out of range: {stop}")
    if start > stop:
        raise LibraryError(f"invalid substring range. start: {start}, end: {stop}")
    return s[start:stop]


def join(items: list[str], sep: str = "") -> str:
    return sep.join(items)


# -- lists (library/lists.go) -------------------------------------------------------------------


def is_sorted(items: list[Any]) -> bool:
    return all(items[i] <= items[i + 1] for i in range(len(items) - 1))


def total(items: list[Any]) -> Any:
    return sum(items, 0)


def least(items: list[Any]) -> Any:
    if not items:
        raise LibraryError("min called on empty list")
    return min(items)


def greatest(items: list[Any]) -> Any:
    if not items:
        raise LibraryError("max called on empty list")
    return max(items)


# -- regex (library/regex.go), RE2 as kube-apiserver matches -------------------------------------


def _regex(pattern: str) -> Any:
    from kubesched.apiextensions import patterns

    try:
        return patterns.compiled(pattern)
    except patterns.PatternError as exc:
        raise LibraryError(f"error parsing regexp: {exc}") from None


def find(s: str, pattern: str) -> str:
    m = _regex(pattern).search(s)
    return m.group(0) if m else ""


def find_all(s: str, pattern: str, n: int = -1) -> list[str]:
    found = [m.group(0) for m in _regex(pattern).finditer(s)]
    return found if n < 0 else found[:n]


# -- IPs and CIDRs (library/ip.go, cidr.go) ----------------------------------------------------


def _parse_ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """``netip.ParseAddr`` as the library accepts it: no zone, no IPv4-mapped IPv6, no leading zeros."""
    if "%" in text:
        return None
    try:
        addr = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return None
    return addr


def ip(text: str) -> dict[str, str]:
    addr = _parse_ip(text)
    if addr is None:
        raise LibraryError(f"IP Address {text!r} parse error during conversion from string: ParseAddr({text!r})")
    return {"@ip": str(addr)}


def is_ip(text: str) -> bool:
    return _parse_ip(text) is not None


def _addr(value: Any) -> Any:
    if isinstance(value, dict) and "@ip" in value:
        return ipaddress.ip_address(value["@ip"])
    if isinstance(value, str):
        return ipaddress.ip_address(ip(value)["@ip"])
    raise LibraryError("no such overload")


def _network(value: Any) -> Any:
    if isinstance(value, dict) and "@cidr" in value:
        return ipaddress.ip_network(value["@cidr"], strict=False)
    if isinstance(value, str):
        return ipaddress.ip_network(cidr(value)["@cidr"], strict=False)
    raise LibraryError("no such overload")


def _parse_cidr(text: str) -> Any:
    if "%" in text or "/" not in text:
        return None
    try:
        net = ipaddress.ip_interface(text)
    except ValueError:
        return None
    if isinstance(net.ip, ipaddress.IPv6Address) and net.ip.ipv4_mapped is not None:
        return None
    return net


def cidr(text: str) -> dict[str, str]:
    net = _parse_cidr(text)
    if net is None:
        raise LibraryError(f"network address {text!r} parse error during conversion from string")
    return {"@cidr": str(net)}


def is_cidr(text: str) -> bool:
    return _parse_cidr(text) is not None


def family(value: Any) -> int:
    """``family()`` is declared on an ip only (k8s.io/apiserver/pkg/cel/library/ip.go): a string or
    a cidr has no such overload."""
    if isinstance(value, dict) and "@ip" in value:
        return int(_addr(value).version)
    raise LibraryError("no such overload")


def contains_ip(net: Any, addr: Any) -> bool:
    return _addr(addr) in _network(net)


def contains_cidr(net: Any, other: Any) -> bool:
    inner = _network(other)
    outer = _network(net)
    return inner.version == outer.version and inner.subnet_of(outer)


def prefix_length(net: Any) -> int:
    return int(_network(net).prefixlen)


def masked(net: Any) -> dict[str, str]:
    return {"@cidr": str(_network(net))}


def cidr_ip(net: Any) -> dict[str, str]:
    if isinstance(net, dict) and "@cidr" in net:
        return {"@ip": str(ipaddress.ip_interface(net["@cidr"]).ip)}
    return ip(net)  # ``ip(string)``


def _ip_test(name: str) -> Callable[[Any], bool]:
    def test(value: Any) -> bool:
        addr = _addr(value)
        if name == "isGlobalUnicast":
            return not (
                addr.is_multicast or addr.is_loopback or addr.is_link_local or addr.is_unspecified
            ) and addr != ipaddress.ip_address("255.255.255.255")
        if name == "isLinkLocalMulticast":
            net = "224.0.0.0/24" if addr.version == 4 else "ff02::/16"
            return addr in ipaddress.ip_network(net)
        return bool(
            {
                "isUnspecified": addr.is_unspecified,
                "isLoopback": addr.is_loopback,
                "isLinkLocalUnicast": addr.is_link_local and not addr.is_multicast,
            }[name]
        )

    return test


# -- URLs (library/urls.go) ---------------------------------------------------------------------


def _parse_url(text: str) -> Any:
    """``url.Parse`` as the library takes it: an absolute URI or an absolute path."""
    parts = urlsplit(text)
    if not parts.scheme and not text.startswith("/"):
        return None
    if any(c in text for c in " \t\n"):
        return None
    return parts


def url(text: str) -> dict[str, str]:
    if _parse_url(text) is None:
        raise LibraryError(f"URL parse error during conversion from string: parse {text!r}: invalid URI for request")
    return {"@url": text}


def is_url(text: str) -> bool:
    return _parse_url(text) is not None


def _url(value: Any) -> Any:
    if isinstance(value, dict) and "@url" in value:
        return urlsplit(value["@url"])
    raise LibraryError("no such overload")


def get_host(value: Any) -> str:
    return str(_url(value).netloc.rpartition("@")[2])


def get_hostname(value: Any) -> str:
    host = get_host(value)
    if host.startswith("["):
        return host[1 : host.find("]")]
    return host.rpartition(":")[0] if ":" in host else host


def get_port(value: Any) -> str:
    host = get_host(value)
    tail = host[host.find("]") + 1 :] if host.startswith("[") else host
    return tail.rpartition(":")[2] if ":" in tail else ""


def get_query(value: Any) -> dict[str, list[str]]:
    return {k: v for k, v in parse_qs(_url(value).query, keep_blank_values=True).items()}


# -- quantities (library/quantity.go) ---------------------------------------------------------


def _amount(value: Any) -> Fraction:
    if isinstance(value, dict) and "@quantity" in value:
        return parse_quantity(value["@quantity"])
    if isinstance(value, bool):
        raise LibraryError("no such overload")
    if isinstance(value, int):
        return Fraction(value)
    raise LibraryError("no such overload")


_QUANTITY_SHAPE = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"


def quantity(text: str) -> dict[str, str]:
    try:
        parse_quantity(text)
    except QuantityError:
        raise LibraryError(f"quantities must match the regular expression '{_QUANTITY_SHAPE}'") from None
    return {"@quantity": text}


def is_quantity(text: str) -> bool:
    try:
        parse_quantity(text)
    except QuantityError:
        return False
    return True


def _compare(a: Any, b: Any) -> int:
    """``compareTo``: two quantities, or two versions (``semver_compare_to``)."""
    va, vb = _version(a), _version(b)
    if va is not None or vb is not None:
        if va is None or vb is None:
            raise LibraryError("no such overload")
        return semver.compare(va, vb)
    x, y = _amount(a), _amount(b)
    return (x > y) - (x < y)


def _version(value: Any) -> semver.Version | None:
    try:
        return semver.of(value)
    except semver.SemverError as err:
        raise LibraryError(str(err)) from None


def _lists(a: Any, b: Any) -> bool:
    """``ext.Sets``' functions take two lists."""
    if not isinstance(a, list) or not isinstance(b, list):
        raise LibraryError("no such overload")
    return True


def to_semver(text: Any, normalize: bool = False) -> dict[str, str]:
    """``semver(string)``, ``semver(string, bool)``: an error in blang/semver's words."""
    if not isinstance(text, str) or not isinstance(normalize, bool):
        raise LibraryError("no such overload")
    try:
        return semver.value(semver.normalize_and_parse(text) if normalize else semver.parse(text))
    except semver.SemverError as err:
        raise LibraryError(str(err)) from None


def is_semver(text: Any, normalize: bool = False) -> bool:
    try:
        to_semver(text, normalize)
    except LibraryError as err:
        if str(err) == "no such overload":
            raise
        return False
    return True


def _part(index: int) -> Callable[[Any], int]:
    def part(value: Any) -> int:
        v = _version(value)
        if v is None:
            raise LibraryError("no such overload")
        major, minor, patch = v[0], v[1], v[2]
        return (major, minor, patch)[index]

    return part


def _from(amount: Fraction) -> dict[str, str]:
    if amount.denominator == 1:
        return {"@quantity": str(amount.numerator)}
    return {"@quantity": f"{float(amount)!r}"}


def as_integer(value: Any) -> int:
    amount = _amount(value)
    if amount.denominator != 1 or not -(2**63) <= amount.numerator < 2**63:
        raise LibraryError("cannot convert value to integer")
    return amount.numerator


# cel-go's lists extension (ext/lists.go), with its words when a call fails
MAX_RANGE = 1_000_000  # lists.range's largest list (defaultMaxRangeSize)


def list_range(n: int) -> list[int]:
    if n < 0:
        raise LibraryError(f"lists.range: size must be non-negative, got {n}")
    if n > MAX_RANGE:
        raise LibraryError(f"lists.range: size {n} exceeds maximum allowed ({MAX_RANGE})")
    return list(range(n))


def list_slice(items: list[Any], start: int, end: int) -> list[Any]:
    if start < 0 or end < 0:
        raise LibraryError(f"cannot slice({start}, {end}), negative indexes not supported")
    if start > end:
        raise LibraryError(f"cannot slice({start}, {end}), start index must be less than or equal to end index")
    if len(items) < end:
        raise LibraryError(f"cannot slice({start}, {end}), list is length {len(items)}")
    return items[start:end]


def flatten(items: list[Any], depth: int = 1) -> list[Any]:
    if depth < 0:
        raise LibraryError("level must be non-negative")
    out: list[Any] = []
    for x in items:
        if isinstance(x, list) and depth > 0:
            out.extend(flatten(x, depth - 1))
        else:
            out.append(x)
    return out


def reverse(items: Any) -> Any:
    if not isinstance(items, str | list):
        raise LibraryError("no such overload")
    return items[::-1]


def distinct(items: list[Any]) -> list[Any]:
    """The elements in order, each once by CEL's equality (1 and 1.0 are one; true and 1 two)."""
    seen: set[Any] = set()
    out = []
    for x in items:
        key = _equality_key(x)
        if key not in seen:
            seen.add(key)
            out.append(x)
    return out


def sort(items: list[Any]) -> list[Any]:
    return [items[i] for i in order(items)]


def order(keys: list[Any]) -> list[int]:
    """``@sortByAssociatedKeys``'s order: the indices of ``keys`` sorted by key (sortBy sorts its
    list by the keys it made). Ties keep their order, as Go's ``sort.Slice`` does up to twelve
    elements (its insertion sort); past that Go's order of ties is its pdqsort's."""
    if not keys:
        return []
    kind = type_name(keys[0])
    if kind in ("list", "map", "null_type"):
        raise LibraryError("list elements must be comparable")
    if any(type_name(x) != kind for x in keys):
        raise LibraryError("list elements must have the same type")
    return sorted(range(len(keys)), key=keys.__getitem__)


def _equality_key(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return ("b", value)
    if isinstance(value, int | float):
        return ("n", value)
    if isinstance(value, list):
        return ("l", tuple(_equality_key(x) for x in value))
    if isinstance(value, dict):
        return ("m", frozenset((_equality_key(k), _equality_key(v)) for k, v in value.items()))
    return (type(value).__name__, value)


def first(items: list[Any]) -> Any:
    """A list's first element as an optional (cel-go's optional library, version 2)."""
    if not isinstance(items, list):
        raise LibraryError("no such overload")
    return rust_cel.OptionalValue.of(items[0]) if items else rust_cel.OptionalValue.none()


def last(items: list[Any]) -> Any:
    if not isinstance(items, list):
        raise LibraryError("no such overload")
    return rust_cel.OptionalValue.of(items[-1]) if items else rust_cel.OptionalValue.none()


def entries(value: Any) -> list[list[Any]]:
    """A two-variable comprehension's range as the runtime iterates it: (index, element) of a
    list, (key, value) of a map."""
    if isinstance(value, list):
        return [[i, x] for i, x in enumerate(value)]
    if isinstance(value, dict):
        return [[k, v] for k, v in value.items()]
    raise LibraryError("no such overload")


def pairs_map(pairs: list[list[Any]]) -> dict[Any, Any]:
    """transformMap's result: each key (all distinct, from the range) to its transform."""
    return {k: v for k, v in pairs}


def merge_maps(maps: list[dict[Any, Any]]) -> dict[Any, Any]:
    """transformMapEntry's result: the entries made, a key made twice an error
    (``types.InsertMapKeyValue``)."""
    out: dict[Any, Any] = {}
    for m in maps:
        if not isinstance(m, dict):
            raise LibraryError("no such overload")
        for k, v in m.items():
            if k in out:
                raise LibraryError(f"insert failed: key {_shown(k)} already exists")
            out[k] = v
    return out


def _format(text: str, args: list[Any]) -> str:
    try:
        return string_format(text, args)
    except FormatError as exc:
        raise LibraryError(str(exc)) from None


def _shown(value: Any) -> str:
    """A key as Go's ``%v`` prints a CEL value (a string bare, a bool lower-case)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "__cel_entries": entries,
    "__lists_range": list_range,
    "slice": list_slice,
    "flatten": flatten,
    "distinct": distinct,
    "sort": sort,
    "__cel_order": order,
    "first": first,
    "last": last,
    "__cel_pairs_map": pairs_map,
    "__cel_merge_maps": merge_maps,
    "charAt": char_at,
    "indexOf": index_of,
    "lastIndexOf": last_index_of,
    "lowerAscii": lambda s: _ascii(s, False),
    "upperAscii": lambda s: _ascii(s, True),
    "replace": replace,
    "split": split,
    "substring": substring,
    "trim": lambda s: s.strip(),
    "join": join,
    "format": _format,
    "__strings_quote": quote,
    "reverse": reverse,  # a string's (ext/strings.go) and a list's (ext/lists.go)
    "isSorted": is_sorted,
    "sum": total,
    "min": least,
    "max": greatest,
    "find": find,
    "findAll": find_all,
    "ip": cidr_ip,
    "isIP": is_ip,
    "cidr": cidr,
    "isCIDR": is_cidr,
    "family": family,
    "containsIP": contains_ip,
    "containsCIDR": contains_cidr,
    "prefixLength": prefix_length,
    "masked": masked,
    "isUnspecified": _ip_test("isUnspecified"),
    "isLoopback": _ip_test("isLoopback"),
    "isLinkLocalMulticast": _ip_test("isLinkLocalMulticast"),
    "isLinkLocalUnicast": _ip_test("isLinkLocalUnicast"),
    "isGlobalUnicast": _ip_test("isGlobalUnicast"),
    "url": url,
    "isURL": is_url,
    "getScheme": lambda u: _url(u).scheme,
    "getHost": get_host,
    "getHostname": get_hostname,
    "getPort": get_port,
    "getEscapedPath": lambda u: _url(u).path,
    "getQuery": get_query,
    "quantity": quantity,
    "isQuantity": is_quantity,
    "sign": lambda q: _compare(q, 0),
    "isInteger": lambda q: _amount(q).denominator == 1 and -(2**63) <= _amount(q).numerator < 2**63,
    "asInteger": as_integer,
    "asApproximateFloat": lambda q: float(_amount(q)),
    "add": lambda a, b: _from(_amount(a) + _amount(b)),
    "sub": lambda a, b: _from(_amount(a) - _amount(b)),
    "compareTo": _compare,
    "__sets_contains": lambda a, b: _lists(a, b) and all(x in a for x in b),
    "__sets_equivalent": lambda a, b: _lists(a, b) and all(x in a for x in b) and all(x in b for x in a),
    "__sets_intersects": lambda a, b: _lists(a, b) and any(x in a for x in b),
    "semver": to_semver,
    "isSemver": is_semver,
    "major": _part(0),
    "minor": _part(1),
    "patch": _part(2),
    "isLessThan": lambda a, b: _compare(a, b) < 0,
    "isGreaterThan": lambda a, b: _compare(a, b) > 0,
}
FUNCTIONS.update(named_formats.FUNCTIONS)
# the names of the library's functions a rule may call (the checker's and the cost model's view)
NAMES = frozenset(FUNCTIONS)
