"""Requests classified into priority levels and flows (``apiserver/pkg/util/flowcontrol``:
``apf_controller.go``'s digest of the configuration objects, ``rule.go``'s matching): the
FlowSchemas in order of matching precedence (then name), the first whose rules match the request
decides its priority level, and its distinguisher method its flow (the user, the namespace, or one
flow for all). A schema naming a level that does not exist is skipped (it is Dangling, which the
controller writes in its status). Each level's share of the server's seats is its nominal
concurrency shares over all levels' (``conc_alloc.go``'s nominal concurrency limits)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
from dataclasses import dataclass
from typing import Any

from kubesched.api.flowcontrol import bootstrap_objects
from kubesched.api.watch import Watch
from kubesched.apiserver.auth.rbac import Attributes
from kubesched.apiserver.flowcontrol.ensurer import ensure
from kubesched.clock import rfc3339
from kubesched.cluster.store import Store
from kubesched.health import LoopHealth

log = logging.getLogger("kubesched.apiserver")
SA_PREFIX = "system:serviceaccount:"
LOOP = "priority-and-fairness"
ENSURE_PERIOD = 30.0
RETRY = 1.0  # seconds before a failed round is tried again
SEEN_LIMIT = 4096  # classifications remembered (users x kinds of request)


@dataclass(frozen=True, slots=True)
class Level:
    """A priority level as the dispatcher needs it."""

    name: str
    uid: str
    exempt: bool
    seats: int  # its nominal concurrency limit (0 for an exempt level)
    queue_length: int  # each queue's limit; 0: Reject when no seat is free
    shares: int


@dataclass(frozen=True, slots=True)
class Classification:
    """``(FlowSchema, PriorityLevelConfiguration, flow distinguisher)`` of one request."""

    schema: str
    schema_uid: str
    level: Level
    flow: str  # the schema's name and the distinguisher: the flow the request queues in


def _contains(x: str, items: list[str], wildcard: str) -> bool:
    """``containsString``: a list of the wildcard alone matches everything."""
    return (len(items) == 1 and items[0] == wildcard) or x in items


def _subject_matches(user: Any, subject: dict[str, Any]) -> bool:
    kind = subject.get("kind")
    if kind == "User":
        name = (subject.get("user") or {}).get("name")
        return name is not None and name in ("*", user.name)
    if kind == "Group":
        group = subject.get("group")
        return group is not None and (group.get("name") == "*" or group.get("name") in user.groups)
    if kind == "ServiceAccount":
        sa = subject.get("serviceAccount")
        if sa is None:
            return False
        namespace, name = str(sa.get("namespace") or ""), str(sa.get("name") or "")
        if name == "*":
            rest = user.name[len(SA_PREFIX) :] if user.name.startswith(SA_PREFIX) else None
            return rest is not None and rest.startswith(namespace) and rest[len(namespace) :].startswith(":")
        return bool(user.name == f"{SA_PREFIX}{namespace}:{name}")
    return False


def _url_matches(urls: list[str], path: str) -> bool:
    """``matchPolicyRuleNonResourceURL``: ``*``, the path itself, or a prefix ending in ``/``."""
    for url in urls:
        if url in ("*", path):
            return True
        prefix = url.removesuffix("*")
        if not prefix.endswith("/"):
            prefix += "/"
        if path.startswith(prefix):
            return True
    return False


def _rule_matches(attrs: Attributes, rule: dict[str, Any]) -> bool:
    """``matchesPolicyRule``: a subject, then a resource rule (or a non-resource rule)."""
    if not any(_subject_matches(attrs.user, s or {}) for s in rule.get("subjects") or []):
        return False
    if attrs.resource_request:
        seek = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
        for r in rule.get("resourceRules") or []:
            if not (
                _contains(attrs.verb, r.get("verbs") or [], "*")
                and _contains(seek, r.get("resources") or [], "*")
                and _contains(attrs.api_group, r.get("apiGroups") or [], "*")
            ):
                continue
            if not attrs.namespace:
                if r.get("clusterScope"):
                    return True
            elif _contains(attrs.namespace, r.get("namespaces") or [], "*"):
                return True
        return False
    return any(
        _contains(attrs.verb, r.get("verbs") or [], "*") and _url_matches(r.get("nonResourceURLs") or [], attrs.path)
        for r in rule.get("nonResourceRules") or []
    )


class FlowControl:
    """The configuration controller: the FlowSchemas and priority levels digested from the
    store, again whenever one of them changes (a watch on both kinds), with each schema's
    Dangling condition kept in its status."""

    def __init__(self, store: Store, server_seats: int) -> None:
        self.store = store
        self.server_seats = server_seats
        self.levels: dict[str, Level] = {}
        self.schemas: list[dict[str, Any]] = []
        self._watch: Watch | None = None
        self._stale = True
        self._seen: dict[tuple[Any, ...], Classification] = {}
        self.wake: asyncio.Event | None = None  # set when a schema or level changed (the loop's)

    def start(self) -> None:
        """Follow the two kinds (the informers of the controller)."""
        self._watch = self.store.watch(["FlowSchema", "PriorityLevelConfiguration"], notify=self._changed)
        self._stale = True

    def _changed(self) -> None:
        self._stale = True
        if self.wake is not None:
            self.wake.set()

    async def run(self, stop: asyncio.Event, health: LoopHealth, period: float = ENSURE_PERIOD) -> None:
        """The post-start hook's loop and the controller's status writes: the bootstrap
        configuration ensured now and every ``period`` (upstream: a minute; here within the
        health check's stall), each schema's Dangling condition written when the
        configuration changes. An error is logged and counted, and the round is tried again a
        second later (the hook's first poll interval)."""
        self.wake = asyncio.Event()
        loop = asyncio.get_running_loop()
        due = loop.time()  # the next ensuring round
        while not stop.is_set():
            wait = RETRY
            try:
                if loop.time() >= due:
                    ensure(self.store)
                    due = loop.time() + period
                self.write_conditions()
                health.ok(LOOP)
                wait = max(0.0, due - loop.time())
            except Exception as exc:
                health.error(LOOP, "the API Priority and Fairness configuration", exc)
            self.wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), wait)

    def classify(self, attrs: Attributes) -> Classification:
        """The schema that matches first, its level and the request's flow; remembered for
        requests alike in all that matching reads, until the configuration changes."""
        if self._stale:
            self.digest()
        user = attrs.user
        key = (
            user.name,
            user.groups,
            attrs.verb,
            attrs.resource_request,
            attrs.api_group,
            attrs.resource,
            attrs.subresource,
            attrs.namespace,
            "" if attrs.resource_request else attrs.path,
        )
        hit = self._seen.get(key)
        if hit is None:
            if len(self._seen) >= SEEN_LIMIT:
                self._seen.clear()
            try:
                hit = self._classify(attrs)
            except Exception:  # a stored schema we cannot read: the request is still served, by catch-all
                log.exception("classifying a request of %s", user.name)
                hit = self._catch_all(user.name)
            self._seen[key] = hit
        return hit

    def _classify(self, attrs: Attributes) -> Classification:
        for fs in self.schemas:
            spec = fs.get("spec") or {}
            if not any(_rule_matches(attrs, r or {}) for r in spec.get("rules") or []):
                continue
            level = self.levels[(spec.get("priorityLevelConfiguration") or {}).get("name", "")]
            method = (spec.get("distinguisherMethod") or {}).get("type")
            distinguisher = {"ByUser": attrs.user.name, "ByNamespace": attrs.namespace}.get(method or "", "")
            name = fs["metadata"]["name"]
            return Classification(name, fs["metadata"].get("uid", ""), level, f"{name}/{distinguisher}")
        return self._catch_all(attrs.user.name)  # nothing matched (catch-all was edited meanwhile)

    def _catch_all(self, user: str) -> Classification:
        level = self.levels.get("catch-all") or _builtin_catch_all()
        return Classification("catch-all", "", level, f"catch-all/{user}")

    def digest(self) -> None:
        """``digestConfigObjects``: levels with their seats, schemas in matching order."""
        if self._watch is not None:
            self._watch.drain()
        self._stale = False
        self._seen.clear()
        levels = [o for o in self.store.list("PriorityLevelConfiguration")[0] if o.get("spec")]
        if not any(o["metadata"]["name"] == "catch-all" for o in levels):
            levels.append(_builtin("PriorityLevelConfiguration", "catch-all"))
        if not any(o["metadata"]["name"] == "exempt" for o in levels):
            levels.append(_builtin("PriorityLevelConfiguration", "exempt"))
        shares = {o["metadata"]["name"]: _shares(o) for o in levels}
        total = sum(shares.values()) or 1
        self.levels = {}
        for o in levels:
            name = o["metadata"]["name"]
            spec = o["spec"]
            exempt = spec.get("type") == "Exempt"
            queuing = ((spec.get("limited") or {}).get("limitResponse") or {}).get("queuing") or {}
            seats = 0 if exempt else max(1, math.ceil(self.server_seats * shares[name] / total))
            self.levels[name] = Level(
                name,
                o["metadata"].get("uid", ""),
                exempt,
                seats,
                int(queuing.get("queueLengthLimit") or 0),
                shares[name],
            )
        schemas = self.store.list("FlowSchema")[0]
        if not any(o["metadata"]["name"] == "exempt" for o in schemas):
            schemas.append(_builtin("FlowSchema", "exempt"))
        if not any(o["metadata"]["name"] == "catch-all" for o in schemas):
            schemas.append(_builtin("FlowSchema", "catch-all"))
        schemas.sort(key=lambda o: ((o.get("spec") or {}).get("matchingPrecedence") or 0, o["metadata"]["name"]))
        self.schemas = [o for o in schemas if _level_of(o) in self.levels]

    def write_conditions(self) -> None:
        """Each stored schema's Dangling condition as the controller words it, written when it
        changed (a status write, as the controller's server-side apply of status)."""
        if self._stale:
            self.digest()
        now = rfc3339(self.store.clock.now())
        for fs in self.store.list("FlowSchema")[0]:
            level = _level_of(fs)
            dangling = level not in self.levels
            wanted = {
                "type": "Dangling",
                "status": "True" if dangling else "False",
                "reason": "NotFound" if dangling else "Found",
                "message": f"This FlowSchema references the PriorityLevelConfiguration object named "
                f"{json.dumps(level)} " + ("but there is no such object" if dangling else "and it exists"),
            }
            conditions = list((fs.get("status") or {}).get("conditions") or [])
            old = next((c for c in conditions if c.get("type") == "Dangling"), None)
            if old is not None and all(old.get(k) == v for k, v in wanted.items()):
                continue
            wanted["lastTransitionTime"] = now
            kept = [c for c in conditions if c.get("type") != "Dangling"]

            def patched(o: dict[str, Any], cond: dict[str, Any] = wanted, rest: list[Any] = kept) -> dict[str, Any]:
                return {
                    **o,
                    "metadata": dict(o["metadata"]),
                    "status": {**(o.get("status") or {}), "conditions": [*rest, cond]},
                }

            self.store.mutate("FlowSchema", "", fs["metadata"]["name"], patched, generation=False)
        self._stale = False


def _level_of(fs: dict[str, Any]) -> str:
    return str(((fs.get("spec") or {}).get("priorityLevelConfiguration") or {}).get("name") or "")


def _shares(obj: dict[str, Any]) -> int:
    spec = obj.get("spec") or {}
    part = spec.get("limited") if spec.get("type") == "Limited" else spec.get("exempt")
    return int((part or {}).get("nominalConcurrencyShares") or 0)


def _builtin(kind: str, name: str) -> dict[str, Any]:
    """A mandatory object as the bootstrap configuration defines it, for when it is missing."""
    boot = next(o for o in bootstrap_objects(kind) if o["metadata"]["name"] == name)
    return {"metadata": {"name": name, "uid": ""}, "spec": boot["spec"]}


def _builtin_catch_all() -> Level:
    return Level("catch-all", "", False, 1, 0, 5)
