"""API Priority and Fairness configuration, flowcontrol.apiserver.k8s.io/v1: FlowSchemas and
PriorityLevelConfigurations defaulted (``pkg/apis/flowcontrol/v1/defaults.go``) and validated
(``pkg/apis/flowcontrol/validation/validation.go``) as kube-apiserver does, every error of an
object at once in upstream's order and words; the mandatory objects (``exempt``, ``catch-all``)
must keep their fixed spec."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from kubesched.api.quota import aggregate
from kubesched.api.validation import dns_label_errors, dns_subdomain_errors
from kubesched.errors import InputError

MAX_MATCHING_PRECEDENCE = 10_000  # FlowSchemaMaxMatchingPrecedence
DEFAULT_MATCHING_PRECEDENCE = 1000
DEFAULT_QUEUING = {"queues": 64, "handSize": 8, "queueLengthLimit": 50}
DEFAULT_LIMITED_SHARES = 30
MAX_QUEUES = 10_000_000  # priorityLevelConfigurationQueuingMaxQueues
MAX_HASH_BITS = 60  # shufflesharding.MaxHashBits
VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch")
SUBJECT_KINDS = ("Group", "ServiceAccount", "User")
DISTINGUISHERS = ("ByNamespace", "ByUser")
ENABLEMENTS = ("Exempt", "Limited")
LIMIT_RESPONSES = ("Queue", "Reject")
NS_INTRO = "each member of this list must be '*' or a DNS-1123 label; "
PRESERVE_ZERO_SHARES = "flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares"


# -- defaults ----------------------------------------------------------------------------------
def default_flow_schema(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``SetDefaults_FlowSchemaSpec``: matchingPrecedence 0 becomes 1000."""
    out = dict(obj)
    spec = dict(out.get("spec") or {})
    if not spec.get("matchingPrecedence"):
        spec["matchingPrecedence"] = DEFAULT_MATCHING_PRECEDENCE
    out["spec"] = spec
    return out


def default_priority_level(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``SetDefaults_ExemptPriorityLevelConfiguration``, ``..._LimitedPriorityLevelConfiguration``
    and ``SetDefaults_QueuingConfiguration`` (zeros become 64 queues, hands of 8, 50 a queue)."""
    out = dict(obj)
    spec = dict(out.get("spec") or {})
    if isinstance(spec.get("exempt"), dict):
        exempt = dict(spec["exempt"])
        exempt.setdefault("nominalConcurrencyShares", 0)
        exempt.setdefault("lendablePercent", 0)
        for key in ("nominalConcurrencyShares", "lendablePercent"):
            if exempt[key] is None:
                exempt[key] = 0
        spec["exempt"] = exempt
    if isinstance(spec.get("limited"), dict):
        limited = dict(spec["limited"])
        if limited.get("nominalConcurrencyShares") is None:
            limited["nominalConcurrencyShares"] = DEFAULT_LIMITED_SHARES
        if limited.get("lendablePercent") is None:
            limited["lendablePercent"] = 0
        response = dict(limited.get("limitResponse") or {})
        if isinstance(response.get("queuing"), dict):
            queuing = dict(response["queuing"])
            for key, value in DEFAULT_QUEUING.items():
                if not queuing.get(key):
                    queuing[key] = value
            response["queuing"] = queuing
        limited["limitResponse"] = response
        spec["limited"] = limited
    out["spec"] = spec
    return out


# -- validation --------------------------------------------------------------------------------
def _shown(value: Any) -> str:
    """A bad value as field.Error shows it: numbers bare, strings quoted, others as JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    return json.dumps(value, separators=(",", ":"))


def _invalid(field: str, value: Any, detail: str) -> InputError:
    return InputError(f"Invalid value: {_shown(value)}: {detail}", field=field)


def _required(field: str, detail: str = "") -> InputError:
    return InputError(f"Required value: {detail}" if detail else "Required value", field=field)


def _forbidden(field: str, detail: str) -> InputError:
    return InputError(f"Forbidden: {detail}", field=field)


class _Declarative(InputError):
    """An error declarative validation reports (``MarkCoveredByDeclarative``): without a detail,
    and after every other error of the object."""


def _covered(field: str, what: str) -> InputError:
    return _Declarative(what, field=field)


def _unsupported(field: str, value: Any, supported: tuple[str, ...]) -> InputError:
    listed = ", ".join(json.dumps(s) for s in supported)
    return InputError(f"Unsupported value: {_shown(value)}: supported values: {listed}", field=field)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _wildcard_list(items: list[Any], field: str, what: str) -> Iterator[InputError]:
    if len(items) > 1 and "*" in items:
        yield _invalid(field, items, f"if '*' is present, must not specify other {what}")


def _verbs(rule: Mapping[str, Any], at: str) -> Iterator[InputError]:
    verbs = _list(rule.get("verbs"))
    if not verbs:
        yield _required(f"{at}.verbs", "verbs must contain at least one value")
    elif "*" in verbs:
        yield from _wildcard_list(verbs, f"{at}.verbs", "verbs")
    elif not set(verbs) <= set(VERBS):
        yield _unsupported(f"{at}.verbs", verbs, VERBS)


def _url_error(path: str, at: str) -> InputError | None:
    """``ValidateNonResourceURLPath``."""
    if not path:
        return _invalid(at, path, "must not be empty")
    if path == "/":
        return None
    if not path.startswith("/"):
        return _invalid(at, path, "must start with slash")
    if " " in path:
        return _invalid(at, path, "must not contain white-space")
    if "//" in path:
        return _invalid(at, path, "must not contain double slash")
    stars = path.count("*")
    if stars > 1 or (stars == 1 and path[-2:] != "/*"):
        return _invalid(at, path, "wildcard can only do suffix matching")
    return None


def _resource_rule(rule: Mapping[str, Any], at: str) -> Iterator[InputError]:
    yield from _verbs(rule, at)
    groups = _list(rule.get("apiGroups"))
    if not groups:
        yield _required(f"{at}.apiGroups", "resource rules must supply at least one api group")
    else:
        yield from _wildcard_list(groups, f"{at}.apiGroups", "api groups")
    resources = _list(rule.get("resources"))
    if not resources:
        yield _required(f"{at}.resources", "resource rules must supply at least one resource")
    else:
        yield from _wildcard_list(resources, f"{at}.resources", "resources")
    namespaces = _list(rule.get("namespaces"))
    if not namespaces and not rule.get("clusterScope"):
        yield _required(
            f"{at}.namespaces", "resource rules that are not cluster scoped must supply at least one namespace"
        )
    elif "*" in namespaces:
        if len(namespaces) > 1:
            yield _invalid(f"{at}.namespaces", namespaces, "if '*' is present, must not specify other namespaces")
    else:
        for i, ns in enumerate(namespaces):
            for msg in dns_label_errors(str(ns)):
                yield _invalid(f"{at}.namespaces[{i}]", ns, NS_INTRO + msg)


def _non_resource_rule(rule: Mapping[str, Any], at: str) -> Iterator[InputError]:
    yield from _verbs(rule, at)
    urls = _list(rule.get("nonResourceURLs"))
    if not urls:
        yield _required(f"{at}.nonResourceURLs", "nonResourceURLs must contain at least one value")
    elif "*" in urls:
        yield from _wildcard_list(urls, f"{at}.nonResourceURLs", "non-resource URLs")
    else:
        for i, url in enumerate(urls):
            err = _url_error(str(url), f"{at}.nonResourceURLs[{i}]")
            if err is not None:
                yield err


_OTHERS = {
    "User": (("serviceAccount", "ServiceAccount"), ("group", "Group")),
    "ServiceAccount": (("user", "User"), ("group", "Group")),
    "Group": (("serviceAccount", "ServiceAccount"), ("user", "User")),
}
_OWN = {"User": "user", "ServiceAccount": "serviceAccount", "Group": "group"}


def _subject(subject: Mapping[str, Any], at: str) -> Iterator[InputError]:
    """``ValidateFlowSchemaSubject``: the member its kind names, and no other."""
    kind = subject.get("kind")
    if kind not in _OWN:
        yield _unsupported(f"{at}.kind", kind or "", SUBJECT_KINDS)
        return
    own = _OWN[str(kind)]
    member = subject.get(own)
    if not isinstance(member, dict):
        yield _required(f"{at}.{own}", f"{own} is required when subject kind is '{kind}'")
    elif kind == "ServiceAccount":
        name, ns = str(member.get("name") or ""), str(member.get("namespace") or "")
        if not name:
            yield _required(f"{at}.{own}.name")
        elif name != "*":
            for msg in dns_subdomain_errors(name):
                yield _invalid(f"{at}.{own}.name", name, msg)
        if ns:
            for msg in dns_label_errors(ns):
                yield _invalid(f"{at}.{own}.namespace", ns, msg)
        else:
            yield _required(f"{at}.{own}.namespace", "must specify namespace for service account")
    elif not member.get("name"):
        yield _required(f"{at}.{own}.name")
    for other, other_kind in _OTHERS[str(kind)]:
        if subject.get(other) is not None:
            yield _forbidden(f"{at}.{other}", f"{other} is forbidden when subject kind is not '{other_kind}'")


def _conditions(status: Mapping[str, Any]) -> Iterator[InputError]:
    seen: set[str] = set()
    for i, cond in enumerate(_list(status.get("conditions"))):
        kind = str((cond or {}).get("type") or "")
        if kind in seen:
            yield InputError(f"Duplicate value: {json.dumps(kind)}", field=f"status.conditions[{i}].type")
        seen.add(kind)
        if not kind:
            yield _required(f"status.conditions[{i}].type")


def flow_schema_errors(obj: Mapping[str, Any], mandatory: Mapping[str, Any] | None = None) -> Iterator[InputError]:
    """``ValidateFlowSchema`` after defaulting; ``mandatory``: the fixed spec when the object is
    one of the mandatory FlowSchemas."""
    name = str((obj.get("metadata") or {}).get("name") or "")
    spec = obj.get("spec") or {}
    precedence = spec.get("matchingPrecedence") or 0
    if precedence <= 0:
        yield _invalid("spec.matchingPrecedence", precedence, "must be a positive value")
    if precedence > MAX_MATCHING_PRECEDENCE:
        yield _invalid("spec.matchingPrecedence", precedence, f"must not be greater than {MAX_MATCHING_PRECEDENCE}")
    if precedence == 1 and name != "exempt":
        yield _invalid(
            "spec.matchingPrecedence", precedence, "only the schema named 'exempt' may have matchingPrecedence 1"
        )
    method = spec.get("distinguisherMethod")
    if isinstance(method, dict) and method.get("type") not in DISTINGUISHERS:
        # the value shown is the method itself, an internal struct: JSON with its Go field names
        shown = json.dumps({"Type": method.get("type") or ""}, separators=(",", ":"))
        listed = ", ".join(json.dumps(d) for d in DISTINGUISHERS)
        yield InputError(
            f"Unsupported value: {shown}: supported values: {listed}", field="spec.distinguisherMethod.type"
        )
    level = str((spec.get("priorityLevelConfiguration") or {}).get("name") or "")
    if level:
        for msg in dns_subdomain_errors(level):
            yield _invalid("spec.priorityLevelConfiguration.name", level, msg)
    else:
        yield _required("spec.priorityLevelConfiguration.name", "must reference a priority level")
    for i, rule in enumerate(_list(spec.get("rules"))):
        at = f"spec.rules[{i}]"
        rule = rule or {}
        subjects = _list(rule.get("subjects"))
        if not subjects:
            yield _required(f"{at}.subjects", "subjects must contain at least one value")
        for j, subject in enumerate(subjects):
            yield from _subject(subject or {}, f"{at}.subjects[{j}]")
        resource_rules, other_rules = _list(rule.get("resourceRules")), _list(rule.get("nonResourceRules"))
        if not resource_rules and not other_rules:
            yield _required(at, "at least one of resourceRules and nonResourceRules has to be non-empty")
        for j, r in enumerate(resource_rules):
            yield from _resource_rule(r or {}, f"{at}.resourceRules[{j}]")
        for j, r in enumerate(other_rules):
            yield from _non_resource_rule(r or {}, f"{at}.nonResourceRules[{j}]")
    if mandatory is not None and not same_spec(spec, mandatory):
        shown = go_shown(spec, "FlowSchemaSpec")
        yield InputError(f"Invalid value: {shown}: spec of '{name}' must equal the fixed value", field="spec")
    yield from _conditions(obj.get("status") or {})


def priority_level_errors(obj: Mapping[str, Any], mandatory: Mapping[str, Any] | None = None) -> Iterator[InputError]:
    """``ValidatePriorityLevelConfiguration`` after defaulting."""
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or "")
    if PRESERVE_ZERO_SHARES in (meta.get("annotations") or {}):
        yield _forbidden("metadata.annotations", f"annotation '{PRESERVE_ZERO_SHARES}' is forbidden")
    spec = obj.get("spec") or {}
    kind = spec.get("type") or ""
    if (name == "exempt") != (kind == "Exempt"):
        yield _invalid("spec.type", kind, "must be 'Exempt' if and only if `name` is 'exempt'")
    if kind == "Exempt":
        if spec.get("limited") is not None:
            yield _covered("spec.limited", "Forbidden")
        exempt = spec.get("exempt")
        if isinstance(exempt, dict):
            shares, lendable = exempt.get("nominalConcurrencyShares"), exempt.get("lendablePercent")
            if shares is not None and shares < 0:
                yield _invalid("spec.exempt.nominalConcurrencyShares", shares, "must be a non-negative integer")
            if lendable is not None and not 0 <= lendable <= 100:
                yield _invalid("spec.exempt.lendablePercent", lendable, "must be between 0 and 100, inclusive")
    elif kind == "Limited":
        if spec.get("exempt") is not None:
            yield _covered("spec.exempt", "Forbidden")
        limited = spec.get("limited")
        if not isinstance(limited, dict):
            yield _covered("spec.limited", "Required value")
        else:
            yield from _limited(limited)
    elif not kind:
        yield _covered("spec.type", "Required value")
    else:
        yield _unsupported("spec.type", kind, ENABLEMENTS)
    if mandatory is not None:
        have, want = copy.deepcopy(dict(spec)), mandatory
        if name == "exempt":  # everything but spec.exempt is fixed
            have["exempt"] = want.get("exempt")
            detail = f"spec of '{name}' except the 'spec.exempt' field must equal the fixed value"
        else:
            detail = f"spec of '{name}' must equal the fixed value"
        if not same_spec(have, want):
            shown = go_shown(spec, "PriorityLevelConfigurationSpec")
            yield InputError(f"Invalid value: {shown}: {detail}", field="spec")
    yield from _conditions(obj.get("status") or {})


def _limited(limited: Mapping[str, Any]) -> Iterator[InputError]:
    at = "spec.limited"
    shares = limited.get("nominalConcurrencyShares") or 0
    if shares < 0:
        yield _invalid(f"{at}.nominalConcurrencyShares", shares, "must be a non-negative integer")
    response = limited.get("limitResponse") or {}
    kind = response.get("type") or ""
    if kind == "Reject":
        if response.get("queuing") is not None:
            yield _covered(f"{at}.limitResponse.queuing", "Forbidden")
    elif kind == "Queue":
        queuing = response.get("queuing")
        if not isinstance(queuing, dict):
            yield _covered(f"{at}.limitResponse.queuing", "Required value")
        else:
            yield from _queuing(queuing, f"{at}.limitResponse.queuing")
    elif not kind:
        yield _covered(f"{at}.limitResponse.type", "Required value")
    else:
        yield _unsupported(f"{at}.limitResponse.type", kind, LIMIT_RESPONSES)
    lendable, borrowing = limited.get("lendablePercent"), limited.get("borrowingLimitPercent")
    if lendable is not None and not 0 <= lendable <= 100:
        yield _invalid(f"{at}.lendablePercent", lendable, "must be between 0 and 100, inclusive")
    if borrowing is not None and borrowing < 0:
        yield _invalid(f"{at}.borrowingLimitPercent", borrowing, "if specified, must be a non-negative integer")


def required_entropy_bits(deck: int, hand: int) -> int:
    """``shufflesharding.RequiredEntropyBits``."""
    return math.ceil(math.log2(deck) * hand)


def _queuing(queuing: Mapping[str, Any], at: str) -> Iterator[InputError]:
    length, queues, hand = (int(queuing.get(k) or 0) for k in ("queueLengthLimit", "queues", "handSize"))
    if length <= 0:
        yield _invalid(f"{at}.queueLengthLimit", length, "must be positive")
    if queues <= 0:
        yield _invalid(f"{at}.queues", queues, "must be positive")
    elif queues > MAX_QUEUES:
        yield _invalid(f"{at}.queues", queues, f"must not be greater than {MAX_QUEUES}")
    if hand <= 0:
        yield _invalid(f"{at}.handSize", hand, "must be positive")
    elif hand > queues:
        yield _invalid(f"{at}.handSize", hand, f"should not be greater than queues ({queues})")
    elif required_entropy_bits(queues, hand) > MAX_HASH_BITS:
        yield _invalid(
            f"{at}.handSize",
            hand,
            f"required entropy bits of deckSize {queues} and handSize {hand} "
            f"should not be greater than {MAX_HASH_BITS}",
        )


# the internal Go types' fields (``pkg/apis/flowcontrol/types.go``), in order: a spec shown in an
# error is the internal struct as encoding/json writes it, Go names, nil pointers and slices null
_NAME = (("Name", "name", None),)
_GO_TYPES: dict[str, tuple[tuple[str, str, str | None], ...]] = {
    "FlowSchemaSpec": (
        ("PriorityLevelConfiguration", "priorityLevelConfiguration", "Name"),
        ("MatchingPrecedence", "matchingPrecedence", None),
        ("DistinguisherMethod", "distinguisherMethod", "Distinguisher"),
        ("Rules", "rules", "[]Rule"),
    ),
    "Name": _NAME,
    "Distinguisher": (("Type", "type", None),),
    "Rule": (
        ("Subjects", "subjects", "[]Subject"),
        ("ResourceRules", "resourceRules", "[]ResourceRule"),
        ("NonResourceRules", "nonResourceRules", "[]NonResourceRule"),
    ),
    "Subject": (
        ("Kind", "kind", None),
        ("User", "user", "Name"),
        ("Group", "group", "Name"),
        ("ServiceAccount", "serviceAccount", "ServiceAccountSubject"),
    ),
    "ServiceAccountSubject": (("Namespace", "namespace", None), ("Name", "name", None)),
    "ResourceRule": (
        ("Verbs", "verbs", None),
        ("APIGroups", "apiGroups", None),
        ("Resources", "resources", None),
        ("ClusterScope", "clusterScope", None),
        ("Namespaces", "namespaces", None),
    ),
    "NonResourceRule": (("Verbs", "verbs", None), ("NonResourceURLs", "nonResourceURLs", None)),
    "PriorityLevelConfigurationSpec": (
        ("Type", "type", None),
        ("Limited", "limited", "Limited"),
        ("Exempt", "exempt", "Exempt"),
    ),
    "Limited": (
        ("NominalConcurrencyShares", "nominalConcurrencyShares", None),
        ("LimitResponse", "limitResponse", "LimitResponse"),
        ("LendablePercent", "lendablePercent", None),
        ("BorrowingLimitPercent", "borrowingLimitPercent", None),
    ),
    "LimitResponse": (("Type", "type", None), ("Queuing", "queuing", "Queuing")),
    "Queuing": (
        ("Queues", "queues", None),
        ("HandSize", "handSize", None),
        ("QueueLengthLimit", "queueLengthLimit", None),
    ),
    "Exempt": (
        ("NominalConcurrencyShares", "nominalConcurrencyShares", None),
        ("LendablePercent", "lendablePercent", None),
    ),
}
# fields that are values, not pointers or slices, in the internal types: absent is their zero
_ZERO = {
    "Name": "",
    "MatchingPrecedence": 0,
    "Type": "",
    "Kind": "",
    "Namespace": "",
    "ClusterScope": False,
    "Queues": 0,
    "HandSize": 0,
    "QueueLengthLimit": 0,
}
_VALUE_STRUCTS = {"PriorityLevelConfiguration", "LimitResponse"}


def go_shown(value: Any, struct: str) -> str:
    """A spec as the internal Go struct prints in a field error (``{"Type":"Limited",...}``)."""

    def conv(v: Any, kind: str | None, go_name: str, limited: bool) -> Any:
        if kind is None:
            if v is None:
                if go_name == "NominalConcurrencyShares" and limited:  # an int32 in internal Limited
                    return 0
                return _ZERO.get(go_name)
            return v
        if kind.startswith("[]"):
            return None if v is None else [conv(x, kind[2:], "", False) for x in v]
        if v is None:
            return conv({}, kind, go_name, False) if go_name in _VALUE_STRUCTS else None
        return {g: conv(v.get(j), k, g, kind == "Limited") for g, j, k in _GO_TYPES[kind]}

    return json.dumps(conv(value, struct, "", False), separators=(",", ":"))


def same_spec(have: Any, want: Any) -> bool:
    """``apiequality.Semantic.DeepEqual`` of two specs as JSON holds them: an empty list or
    object is the same as an absent one."""
    return _normal(have) == _normal(want)


def _normal(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items() if v not in (None, [], {}, False, "", 0) or k == "type"}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


# -- the bootstrap configuration ---------------------------------------------------------------
@cache
def _bootstrap() -> dict[str, list[dict[str, Any]]]:
    raw: dict[str, list[dict[str, Any]]] = json.loads(
        Path(__file__).with_name("flowcontrol_bootstrap.json").read_text()
    )
    return raw


def bootstrap_objects(kind: str) -> list[dict[str, Any]]:
    """kube-apiserver's bootstrap objects of ``kind`` (``FlowSchema`` or
    ``PriorityLevelConfiguration``), fresh copies, each with ``mandatory`` beside its object
    (``flowcontrol_bootstrap.json``, read from kube-apiserver by ``scripts/gen_apf_bootstrap.py``)."""
    key = "flowSchemas" if kind == "FlowSchema" else "priorityLevelConfigurations"
    return copy.deepcopy(_bootstrap()[key])


def mandatory_spec(kind: str, name: str) -> dict[str, Any] | None:
    """The fixed spec of a mandatory object (``exempt``, ``catch-all``), else None."""
    key = "flowSchemas" if kind == "FlowSchema" else "priorityLevelConfigurations"
    for o in _bootstrap()[key]:
        if o["mandatory"] and o["metadata"]["name"] == name:
            return copy.deepcopy(o["spec"])
    return None


def validate(kind: str, obj: Mapping[str, Any]) -> None:
    """The kind's validation on the object with its defaults; every error at once."""
    name = str((obj.get("metadata") or {}).get("name") or "")
    if kind == "FlowSchema":
        errors = list(flow_schema_errors(default_flow_schema(obj), mandatory_spec(kind, name)))
    else:
        errors = list(priority_level_errors(default_priority_level(obj), mandatory_spec(kind, name)))
    aggregate(sorted(errors, key=lambda e: isinstance(e, _Declarative)))
