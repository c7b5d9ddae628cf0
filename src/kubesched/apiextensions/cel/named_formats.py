"""Kubernetes' CEL format library (``apiserver/pkg/cel/library/format.go``): ``format.dns1123Label()``
and its siblings, ``format.named(name)``, and ``<format>.validate(s)``, an optional of the
validator's messages (none when ``s`` is valid), each with apimachinery's words. A format is carried
as a map with one key naming it, as the library's other values are."""

from __future__ import annotations

import re
from collections.abc import Callable

import cel as rust_cel
from kubesched.api.validation import dns_label_errors, dns_subdomain_errors, label_key_errors, label_value_errors
from kubesched.apiextensions.structural import FORMATS
from kubesched.errors import go_quote

KIND = "kubernetes.NamedFormat"

_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)


def _dns1035_errors(name: str) -> list[str]:
    errs = ["must be no more than 63 characters"] if len(name.encode()) > 63 else []
    if not _DNS1035.match(name):
        errs.append(_DNS1035_MSG)
    return errs


def _masked(check: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    """A prefix's check (``maskTrailingDash``): a trailing dash, with the character before it,
    stands for a letter."""

    def prefixed(name: str) -> list[str]:
        if len(name) > 1 and name.endswith("-"):
            name = name[:-2] + "a"
        return check(name)

    return prefixed


def _uri_errors(s: str) -> list[str]:
    """``url.ParseRequestURI``'s error, as Go prints it."""
    shown = go_quote(s)
    if not s:
        return [f"parse {shown}: empty url"]
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in s):
        return [f"parse {shown}: net/url: invalid control character in URL"]
    scheme = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*):", s)
    if s.startswith(":"):
        return [f"parse {shown}: missing protocol scheme"]
    if scheme is None and not s.startswith("/"):
        return [f"parse {shown}: invalid URI for request"]
    return []


def _matches(name: str, message: str) -> Callable[[str], list[str]]:
    valid = FORMATS[name]
    return lambda s: [] if valid(s) else [message]


VALIDATORS: dict[str, Callable[[str], list[str]]] = {
    "dns1123Label": dns_label_errors,
    "dns1123Subdomain": dns_subdomain_errors,
    "dns1035Label": _dns1035_errors,
    "qualifiedName": label_key_errors,
    "dns1123LabelPrefix": _masked(dns_label_errors),
    "dns1123SubdomainPrefix": _masked(dns_subdomain_errors),
    "dns1035LabelPrefix": _masked(_dns1035_errors),
    "labelValue": label_value_errors,
    "uri": _uri_errors,
    "uuid": _matches("uuid", "does not match the UUID format"),
    "byte": _matches("byte", "invalid base64"),
    "date": _matches("date", "invalid date"),
    "datetime": _matches("date-time", "invalid datetime"),
}


def constant(name: str) -> Callable[[], dict[str, str]]:
    """``format.<name>()``."""
    return lambda: {KIND: name}


def named(name: str) -> object:
    """``format.named(name)``: an optional of the format, none for a name the library lacks."""
    if not isinstance(name, str):
        raise TypeError("no such overload")
    if name not in VALIDATORS:
        return rust_cel.OptionalValue.none()
    return rust_cel.OptionalValue.of({KIND: name})


def validate(fmt: object, s: object) -> object:
    """``<format>.validate(s)``: an optional of the messages, none when ``s`` is valid."""
    if not isinstance(fmt, dict) or KIND not in fmt or not isinstance(s, str):
        raise TypeError("no such overload")
    found = VALIDATORS[fmt[KIND]](s)
    return rust_cel.OptionalValue.of(found) if found else rust_cel.OptionalValue.none()


FUNCTIONS: dict[str, Callable[..., object]] = {f"__format_{name}": constant(name) for name in VALIDATORS}
FUNCTIONS["__format_named"] = named
FUNCTIONS["validate"] = validate
