"""HTTP scheduler extenders (``pkg/scheduler/extender.go``, the wire format of staging
``k8s.io/kube-scheduler/extender/v1``): webhooks that filter nodes after the Filter plugins,
add scores beside the Score plugins, and bind instead of DefaultBinder.

The extender/v1 types carry no JSON tags, so their keys are the Go field names (``Pod``,
``NodeNames``, ``FailedNodes``, ``Host``, ``Score``...). Each call is a POST of JSON to
``urlPrefix/verb`` with ``httpTimeout`` (default 5 s), over one pooled httpx client per
extender. The cycle waits for the answer, as upstream's does.
"""

from __future__ import annotations

import base64
import logging
import ssl
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from kubesched.api.pod import PodInfo
from kubesched.errors import InputError
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.status import Code, Status
from kubesched.leaderelection.config import parse_duration
from kubesched.scheduler.nodetable import NodeTable

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("kubesched.scheduler")

DEFAULT_TIMEOUT = 5.0  # DefaultExtenderTimeout
MAX_EXTENDER_PRIORITY = 10  # extender/v1 MaxExtenderPriority
MAX_NODE_SCORE = 100


class ExtenderError(RuntimeError):
    """A call that failed (transport, HTTP status, or the ``Error`` an extender returned)."""


@dataclass(slots=True)
class ExtenderConfig:
    """One ``extenders[]`` entry of KubeSchedulerConfiguration v1."""

    url_prefix: str
    filter_verb: str = ""
    prioritize_verb: str = ""
    preempt_verb: str = ""
    bind_verb: str = ""
    weight: int = 0
    enable_https: bool = False
    tls: dict[str, Any] = field(default_factory=dict)
    http_timeout: float = DEFAULT_TIMEOUT
    node_cache_capable: bool = False
    managed_resources: list[dict[str, Any]] = field(default_factory=list)
    ignorable: bool = False


_KEYS = {
    "urlPrefix",
    "filterVerb",
    "prioritizeVerb",
    "preemptVerb",
    "bindVerb",
    "weight",
    "enableHTTPS",
    "tlsConfig",
    "httpTimeout",
    "nodeCacheCapable",
    "managedResources",
    "ignorable",
}


def parse_extenders(raw: Any) -> list[ExtenderConfig]:
    """``extenders`` with upstream's validation (``validateExtenders``): a positive weight for a
    prioritizer, at most one binder, unique managed resources."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InputError("expected a list", field="extenders")
    out: list[ExtenderConfig] = []
    binders = 0
    for i, e in enumerate(raw):
        path = f"extenders[{i}]"
        if not isinstance(e, dict):
            raise InputError("expected an object", field=path)
        unknown = sorted(set(e) - _KEYS)
        if unknown:
            raise InputError(f'unknown field "{unknown[0]}"', field=f"{path}.{unknown[0]}")
        prefix = e.get("urlPrefix")
        if not isinstance(prefix, str) or not prefix:
            raise InputError("Required value: urlPrefix", field=f"{path}.urlPrefix")
        weight = e.get("weight", 0)
        if not isinstance(weight, int) or isinstance(weight, bool):
            raise InputError(f"Invalid value: {weight!r}: expected an integer", field=f"{path}.weight")
        if e.get("prioritizeVerb") and weight <= 0:
            raise InputError(
                f"Invalid value: {weight}: must have a positive weight applied to it", field=f"{path}.weight"
            )
        if e.get("bindVerb"):
            binders += 1
        names: set[str] = set()
        managed = e.get("managedResources") or []
        for j, r in enumerate(managed):
            name = (r or {}).get("name") if isinstance(r, dict) else None
            if not isinstance(name, str) or not name:
                raise InputError("Required value: name", field=f"{path}.managedResources[{j}].name")
            if name in names:
                raise InputError(
                    f'Invalid value: "{name}": duplicate extender managed resource name',
                    field=f"{path}.managedResources[{j}].name",
                )
            names.add(name)
        timeout = e.get("httpTimeout")
        out.append(
            ExtenderConfig(
                url_prefix=prefix,
                filter_verb=str(e.get("filterVerb") or ""),
                prioritize_verb=str(e.get("prioritizeVerb") or ""),
                preempt_verb=str(e.get("preemptVerb") or ""),
                bind_verb=str(e.get("bindVerb") or ""),
                weight=weight,
                enable_https=bool(e.get("enableHTTPS")),
                tls=dict(e.get("tlsConfig") or {}),
                http_timeout=parse_duration(timeout, f"{path}.httpTimeout") if timeout else DEFAULT_TIMEOUT,
                node_cache_capable=bool(e.get("nodeCacheCapable")),
                managed_resources=[dict(r) for r in managed],
                ignorable=bool(e.get("ignorable")),
            )
        )
    if binders > 1:
        raise InputError(
            f'Invalid value: "found {binders} extenders implementing bind": only one extender can implement bind',
            field="extenders",
        )
    return out


class HTTPExtender:
    """``HTTPExtender``: the calls of one configured extender."""

    def __init__(self, cfg: ExtenderConfig) -> None:
        self.cfg = cfg
        self.name = cfg.url_prefix
        self.managed = {r["name"] for r in cfg.managed_resources}
        import httpx  # imported only when a configuration has extenders (it costs ~0.1 s)

        self._httpx = httpx
        self._client: httpx.Client = httpx.Client(timeout=cfg.http_timeout, verify=self._verify(), cert=self._cert())

    # -- TLS (``makeTransport``) -----------------------------------------------------------------
    def _verify(self) -> Any:
        tls = self.cfg.tls
        if tls.get("insecure"):
            return False
        ca = tls.get("caData")
        if ca:
            return ssl.create_default_context(cadata=base64.b64decode(ca).decode())
        if tls.get("caFile"):
            return ssl.create_default_context(cafile=tls["caFile"])
        return True

    def _cert(self) -> Any:
        tls = self.cfg.tls
        if tls.get("certFile") and tls.get("keyFile"):
            return (tls["certFile"], tls["keyFile"])
        if tls.get("certData") and tls.get("keyData"):
            files = []
            for key in ("certData", "keyData"):
                f = tempfile.NamedTemporaryFile("wb", suffix=".pem", delete=False)  # noqa: SIM115
                f.write(base64.b64decode(tls[key]))
                f.close()
                files.append(f.name)
            return (files[0], files[1])
        return None

    # -- what the scheduler asks --------------------------------------------------------------------
    def is_interested(self, pod: PodInfo) -> bool:
        """``IsInterested``: every pod, or those requesting or limiting a managed resource."""
        if not self.managed:
            return True
        for key in ("containers", "initContainers"):
            for c in (pod.obj.get("spec") or {}).get(key) or []:
                res = (c or {}).get("resources") or {}
                if self.managed & (set(res.get("requests") or {}) | set(res.get("limits") or {})):
                    return True
        return False

    def is_filter(self) -> bool:
        return bool(self.cfg.filter_verb)

    def is_prioritizer(self) -> bool:
        return bool(self.cfg.prioritize_verb)

    def is_binder(self) -> bool:
        return bool(self.cfg.bind_verb)

    def supports_preemption(self) -> bool:
        return bool(self.cfg.preempt_verb)

    def _args(self, pod: PodInfo, names: list[str], node_objs: list[dict[str, Any]]) -> dict[str, Any]:
        if self.cfg.node_cache_capable:
            return {"Pod": pod.obj, "Nodes": None, "NodeNames": names}
        return {"Pod": pod.obj, "Nodes": {"metadata": {}, "items": node_objs}, "NodeNames": None}

    def _send(self, verb: str, args: Any) -> Any:
        url = self.cfg.url_prefix.rstrip("/") + "/" + verb
        if self.cfg.enable_https and url.startswith("http://"):
            url = "https://" + url.removeprefix("http://")
        try:
            resp = self._client.post(url, content=orjson.dumps(args), headers={"Content-Type": "application/json"})
        except self._httpx.HTTPError as exc:
            raise ExtenderError(f"{verb} with extender at URL {url}: {exc}") from None
        if resp.status_code != 200:
            raise ExtenderError(f"failed {verb} with extender at URL {url}, code {resp.status_code}")
        try:
            return orjson.loads(resp.content)
        except orjson.JSONDecodeError as exc:
            raise ExtenderError(f"{verb} with extender at URL {url}: invalid JSON response: {exc}") from None

    def filter(
        self, pod: PodInfo, names: list[str], node_objs: list[dict[str, Any]]
    ) -> tuple[list[str], dict[str, str], dict[str, str]]:
        """The nodes that pass, and the failed and failed-and-unresolvable ones with reasons."""
        result = self._send(self.cfg.filter_verb, self._args(pod, names, node_objs))
        if not isinstance(result, dict):
            raise ExtenderError(f"extender {self.name}: the filter result is not an object")
        if result.get("Error"):
            raise ExtenderError(str(result["Error"]))
        if self.cfg.node_cache_capable and result.get("NodeNames") is not None:
            passed = [str(n) for n in result["NodeNames"]]
        elif not self.cfg.node_cache_capable and result.get("Nodes") is not None:
            passed = [((n or {}).get("metadata") or {}).get("name", "") for n in result["Nodes"].get("items") or []]
        else:
            passed = []
        return passed, dict(result.get("FailedNodes") or {}), dict(result.get("FailedAndUnresolvableNodes") or {})

    def prioritize(self, pod: PodInfo, names: list[str], node_objs: list[dict[str, Any]]) -> dict[str, int]:
        """Host → score (0–10), as the extender answered."""
        result = self._send(self.cfg.prioritize_verb, self._args(pod, names, node_objs))
        if not isinstance(result, list):
            raise ExtenderError(f"extender {self.name}: the prioritize result is not a list")
        out: dict[str, int] = {}
        for hp in result:
            if isinstance(hp, dict) and isinstance(hp.get("Score"), int):
                out[str(hp.get("Host"))] = int(hp["Score"])
        return out

    def process_preemption(
        self, pod: PodInfo, victims: dict[str, tuple[list[dict[str, Any]], int]]
    ) -> dict[str, tuple[list[str], int]]:
        """``ProcessPreemption``: node → (victim pods, PDB violations) in, node → (victim UIDs,
        PDB violations) out; a nodeCacheCapable extender is sent UIDs only (MetaVictims)."""
        if self.cfg.node_cache_capable:
            meta = {
                n: {"Pods": [{"UID": p["metadata"]["uid"]} for p in pods], "NumPDBViolations": v}
                for n, (pods, v) in victims.items()
            }
            args: dict[str, Any] = {"Pod": pod.obj, "NodeNameToVictims": None, "NodeNameToMetaVictims": meta}
        else:
            full = {n: {"Pods": pods, "NumPDBViolations": v} for n, (pods, v) in victims.items()}
            args = {"Pod": pod.obj, "NodeNameToVictims": full, "NodeNameToMetaVictims": None}
        result = self._send(self.cfg.preempt_verb, args)
        if not isinstance(result, dict):
            raise ExtenderError(f"extender {self.name}: the preemption result is not an object")
        out: dict[str, tuple[list[str], int]] = {}
        for node, mv in (result.get("NodeNameToMetaVictims") or {}).items():
            mv = mv or {}
            uids = [str((p or {}).get("UID", "")) for p in mv.get("Pods") or []]
            out[str(node)] = (uids, int(mv.get("NumPDBViolations") or 0))
        return out

    def bind(self, pod: PodInfo, node: str) -> None:
        result = self._send(
            self.cfg.bind_verb,
            {"PodName": pod.name, "PodNamespace": pod.namespace, "PodUID": pod.uid, "Node": node},
        )
        if isinstance(result, dict) and result.get("Error"):
            raise ExtenderError(str(result["Error"]))

    def close(self) -> None:
        self._client.close()


# -- findNodesThatPassExtenders (pkg/scheduler/schedule_one.go): after the Filter plugins, each
# interested filter extender in turn narrows the feasible nodes.

NodeLookup = Callable[[str], "dict[str, Any] | None"]


def node_objects(ext: HTTPExtender, names: list[str], lookup: NodeLookup) -> list[dict[str, Any]]:
    """The Node objects an extender is sent with the names (none when it caches nodes)."""
    if ext.cfg.node_cache_capable:
        return []
    return [obj for obj in map(lookup, names) if obj is not None]


def find_nodes_that_pass_extenders(
    extenders: list[HTTPExtender],
    lookup: NodeLookup,
    pod: PodInfo,
    nodes: NodeTable,
    feasible: np.ndarray,
    diagnosis: Diagnosis,
) -> np.ndarray | Status:
    """The feasible rows every interested filter extender keeps; the nodes one fails take its
    reasons in ``diagnosis`` (unresolvable ones first). An extender's error that is not
    ignorable is the attempt's Error."""
    names = [nodes.names[int(r)] for r in feasible]
    for ext in extenders:
        if not names:
            break
        if not ext.is_filter() or not ext.is_interested(pod):
            continue
        try:
            passed, failed, unresolvable = ext.filter(pod, names, node_objects(ext, names, lookup))
        except ExtenderError as err:
            if ext.cfg.ignorable:
                log.warning("skipping extender %s as it returned error: %s", ext.name, err)
                continue
            return Status.error(str(err))
        for name, message in unresolvable.items():
            if name in nodes.index:
                diagnosis.set_from_extender(nodes.index[name], Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message)
        for name, message in failed.items():
            if name in nodes.index and name not in unresolvable:
                diagnosis.set_from_extender(nodes.index[name], Code.UNSCHEDULABLE, message)
        known = set(names)
        kept = [n for n in passed if n in known]
        if len(kept) < len(names):
            diagnosis.unschedulable_plugins.add("Extender")
        names = kept
    return np.array([nodes.index[n] for n in names], np.int64)
