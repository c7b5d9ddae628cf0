"""Kubernetes' CEL semver library (``k8s.io/apiserver/pkg/cel/library/semverlib.go``): versions parsed
as ``github.com/blang/semver/v4``'s ``Parse`` parses them, with its error words, and ordered by
Semantic Versioning's precedence (``Version.Compare``); ``semver(s, true)`` normalizes first as
``normalizeAndParse`` does (a ``v`` prefix, leading zeros and missing minor or patch numbers)."""

from __future__ import annotations

import json
from typing import Any

NUMBERS = frozenset("0123456789")
ALPHANUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-") | NUMBERS
MAX_UINT64 = 2**64 - 1

Version = tuple[int, int, int, tuple[int | str, ...], tuple[str, ...]]


class SemverError(ValueError):
    """A version that does not parse, in blang/semver's words."""


def _q(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)  # Go's %q for the strings a version holds


def _uint(s: str, name: str) -> int:
    """``strconv.ParseUint`` of digits, none of them a leading zero."""
    if len(s) > 1 and s[0] == "0":
        raise SemverError(f"{name} must not contain leading zeroes {_q(s)}")
    if not s:
        raise SemverError(f"strconv.ParseUint: parsing {_q(s)}: invalid syntax")
    value = int(s)
    if value > MAX_UINT64:
        raise SemverError(f"strconv.ParseUint: parsing {_q(s)}: value out of range")
    return value


def _number(s: str, what: str) -> int:
    if not set(s) <= NUMBERS:
        raise SemverError(f"Invalid character(s) found in {what} number {_q(s)}")
    return _uint(s, f"{what.capitalize()} number")


def _prerelease(s: str) -> int | str:
    if not s:
        raise SemverError("Prerelease is empty")
    if set(s) <= NUMBERS:
        return _uint(s, "Numeric PreRelease version")
    if set(s) <= ALPHANUM:
        return s
    raise SemverError(f"Invalid character(s) found in prerelease {_q(s)}")


def parse(s: str) -> Version:
    """``semver.Parse``."""
    if not s:
        raise SemverError("Version string empty")
    parts = s.split(".", 2)
    if len(parts) != 3:
        raise SemverError("No Major.Minor.Patch elements found")
    major, minor = _number(parts[0], "major"), _number(parts[1], "minor")
    patch_text, build, pre = parts[2], [], []
    if "+" in patch_text:
        patch_text, _, rest = patch_text.partition("+")
        build = rest.split(".")
    if "-" in patch_text:
        patch_text, _, rest = patch_text.partition("-")
        pre = rest.split(".")
    patch = _number(patch_text, "patch")
    prerelease = tuple(_prerelease(p) for p in pre)
    for b in build:
        if not b:
            raise SemverError("Build meta data is empty")
        if not set(b) <= ALPHANUM:
            raise SemverError(f"Invalid character(s) found in build meta data {_q(b)}")
    return major, minor, patch, prerelease, tuple(build)


def normalize_and_parse(s: str) -> Version:
    """``normalizeAndParse``: no ``v`` prefix, no leading zeros, a short version filled with zeros."""
    s = s.removeprefix("v")
    parts = s.split(".", 2)
    for i, p in enumerate(parts):
        if len(p) > 1:
            p = p.lstrip("0")
            if not p or p[0] not in NUMBERS:
                p = "0" + p
            parts[i] = p
    if len(parts) < 3:
        if any(c in parts[-1] for c in "+-"):
            raise SemverError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return parse(".".join(parts))


def render(v: Version) -> str:
    major, minor, patch, pre, build = v
    out = f"{major}.{minor}.{patch}"
    if pre:
        out += "-" + ".".join(str(p) for p in pre)
    if build:
        out += "+" + ".".join(build)
    return out


def compare(a: Version, b: Version) -> int:
    """``Version.Compare``: numbers, then a version without a prerelease above one with, then the
    prerelease identifiers in order (numeric below alphanumeric); build metadata is not compared."""
    numbers_a, numbers_b = a[:3], b[:3]
    if numbers_a != numbers_b:
        return 1 if numbers_a > numbers_b else -1
    pa, pb = a[3], b[3]
    if not pa or not pb:
        return (not pa) - (not pb)
    for x, y in zip(pa, pb, strict=False):
        if isinstance(x, int) != isinstance(y, int):
            return -1 if isinstance(x, int) else 1
        if x != y:
            bigger = x > y if isinstance(x, int) and isinstance(y, int) else str(x) > str(y)
            return 1 if bigger else -1
    return (len(pa) > len(pb)) - (len(pa) < len(pb))


def value(v: Version) -> dict[str, str]:
    """A version as the rule sees it (an object of its own, as ``apiservercel.Semver``)."""
    return {"@semver": render(v)}


def of(obj: Any) -> Version | None:
    """The version a value holds, None when it is not one."""
    if isinstance(obj, dict) and "@semver" in obj:
        return parse(str(obj["@semver"]))
    return None
