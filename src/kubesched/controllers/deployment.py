"""The Deployment controller (``pkg/controller/deployment``): one ReplicaSet per pod template
(``<name>-<pod-template-hash>``) with revisions, the Recreate and RollingUpdate strategies
(maxSurge rounded up, maxUnavailable down, as ``ResolveFenceposts``), proportional scaling
during a rollout, pausing, the revision history limit, and the status and conditions
``kubectl rollout status`` reads (Available, Progressing with its deadline)."""

from __future__ import annotations

import contextlib
import json
import math
from typing import Any

from kubesched.api.errors import AlreadyExists, ApiError
from kubesched.api.intstr import scaled_value
from kubesched.api.watch import DELETED
from kubesched.api.workloads import default_pod_template, pruned
from kubesched.clock import parse_rfc3339, rfc3339
from kubesched.controllers.base import (
    Controller,
    controller_of,
    key_of,
    owner_reference,
    template_hash,
    write_status,
)

HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
# annotations of the Deployment never copied to its ReplicaSets (deployment_util.skipCopyAnnotation)
_NOT_COPIED = {
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    REVISION_HISTORY,
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    "deprecated.deployment.rollback.to",
}


def _replicas(obj: dict[str, Any]) -> int:
    return int((obj.get("spec") or {}).get("replicas", 1) or 0)


def _st(obj: dict[str, Any], field: str) -> int:
    return int((obj.get("status") or {}).get(field) or 0)


def _revision(rs: dict[str, Any]) -> int:
    try:
        return int(((rs.get("metadata") or {}).get("annotations") or {}).get(REVISION) or 0)
    except ValueError:
        return 0


def _created(rs: dict[str, Any]) -> tuple[float, str]:
    meta = rs.get("metadata") or {}
    when = meta.get("creationTimestamp")
    return (parse_rfc3339(when) if when else 0.0, meta.get("name") or "")


def _without_hash(template: dict[str, Any]) -> dict[str, Any]:
    meta = dict(template.get("metadata") or {})
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != HASH_LABEL}
    if labels:
        meta["labels"] = labels
    else:
        meta.pop("labels", None)
    return {**template, "metadata": meta}


def _canonical(template: dict[str, Any]) -> str:
    """The template as compared (``EqualIgnoreHash``): without the hash label, with the API
    defaults filled on both sides."""
    return json.dumps(pruned(default_pod_template(_without_hash(template))), sort_keys=True)


def fenceposts(d: dict[str, Any]) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) of a RollingUpdate Deployment (``ResolveFenceposts``): both
    zero makes maxUnavailable 1; Recreate has neither."""
    strategy = (d.get("spec") or {}).get("strategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return 0, 0
    rolling = strategy.get("rollingUpdate") or {}
    replicas = _replicas(d)
    surge = scaled_value(rolling.get("maxSurge", "25%"), replicas, round_up=True)
    unavailable = scaled_value(rolling.get("maxUnavailable", "25%"), replicas, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, min(unavailable, replicas)


def _condition(status: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == type_), None)


def _set_condition(status: dict[str, Any], type_: str, value: str, reason: str, message: str, now: str) -> None:
    """``SetDeploymentCondition``: same status and reason changes nothing; otherwise the
    condition is replaced, keeping lastTransitionTime while the status stays."""
    current = _condition(status, type_)
    if current is not None and current.get("status") == value and current.get("reason") == reason:
        return
    cond = {
        "type": type_,
        "status": value,
        "lastUpdateTime": now,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    }
    if current is not None and current.get("status") == value:
        cond["lastTransitionTime"] = current.get("lastTransitionTime", now)
    others = [c for c in status.get("conditions") or [] if c.get("type") != type_]
    status["conditions"] = [*others, cond]


class DeploymentController(Controller):
    name = "deployment"
    kind = "Deployment"
    watches = ("ReplicaSet", "Pod")

    def on_event(self, ev: Any) -> None:
        """ReplicaSets mark their Deployment; a pod that goes marks its ReplicaSet's Deployment
        (``deletePod``: a Recreate rollout waits for the old pods to be gone)."""
        if ev.kind != "Pod":
            super().on_event(ev)
            return
        if ev.type != DELETED:
            return
        ref = controller_of(ev.obj)
        if ref is None or ref.get("kind") != "ReplicaSet":
            return
        ns = (ev.obj.get("metadata") or {}).get("namespace") or ""
        rs = self.client.get("ReplicaSet", ns, str(ref.get("name")))
        owner = controller_of(rs) if rs is not None else None
        if owner is not None and owner.get("kind") == self.kind:
            self.dirty[(ns, str(owner.get("name")))] = None

    # -- sync ----------------------------------------------------------------------------------
    def reconcile(self, d: dict[str, Any]) -> None:
        rss = self.index.owned("ReplicaSet", d["metadata"]["uid"])
        new = self._find_new(d, rss)
        olds = [rs for rs in rss if rs is not new]
        spec = d.get("spec") or {}
        if d["metadata"].get("deletionTimestamp"):
            self._sync_status(d, new, olds)
            return
        if spec.get("paused") or self._is_scaling_event(d, rss):
            self._scale(d, new, olds)
        elif ((spec.get("strategy") or {}).get("type") or "RollingUpdate") == "Recreate":
            new, olds = self._recreate(d, new, olds)
        else:
            new, olds = self._rolling(d, new, olds)
        d = self.client.get(self.kind, *key_of(d)) or d
        rss = self.index.owned("ReplicaSet", d["metadata"]["uid"])
        new = self._find_new(d, rss)
        olds = [rs for rs in rss if rs is not new]
        if new is not None and self._complete(d, new, olds):
            self._cleanup(d, olds)
        self._sync_status(d, new, olds)

    def _find_new(self, d: dict[str, Any], rss: list[dict[str, Any]]) -> dict[str, Any] | None:
        """``FindNewReplicaSet``: the oldest ReplicaSet whose template equals the Deployment's,
        the pod-template-hash label aside."""
        want = _canonical((d.get("spec") or {}).get("template") or {})
        same = [rs for rs in rss if _canonical((rs.get("spec") or {}).get("template") or {}) == want]
        return min(same, key=_created) if same else None

    def _is_scaling_event(self, d: dict[str, Any], rss: list[dict[str, Any]]) -> bool:
        replicas = str(_replicas(d))
        for rs in rss:
            if _replicas(rs) <= 0:
                continue
            desired = ((rs.get("metadata") or {}).get("annotations") or {}).get(DESIRED_REPLICAS)
            if desired is not None and desired != replicas:
                return True
        return False

    # -- ReplicaSets ---------------------------------------------------------------------------
    def _annotations(self, d: dict[str, Any], revision: int | None) -> dict[str, str]:
        surge, _ = fenceposts(d)
        out = {k: v for k, v in ((d.get("metadata") or {}).get("annotations") or {}).items() if k not in _NOT_COPIED}
        out[DESIRED_REPLICAS] = str(_replicas(d))
        out[MAX_REPLICAS] = str(_replicas(d) + surge)
        if revision is not None:
            out[REVISION] = str(revision)
        return out

    def _get_or_create_new(
        self, d: dict[str, Any], new: dict[str, Any] | None, olds: list[dict[str, Any]], replicas: int
    ) -> dict[str, Any] | None:
        """``getNewReplicaSet``: the new ReplicaSet with the next revision, created when missing."""
        revision = max((_revision(rs) for rs in olds), default=0) + 1
        if new is not None:
            if _revision(new) < revision:  # a rollback to an older template takes the next revision
                old_rev = _revision(new)

                def bump(o: dict[str, Any]) -> dict[str, Any]:
                    ann = dict(o["metadata"].get("annotations") or {})
                    history = [h for h in (ann.get(REVISION_HISTORY) or "").split(",") if h]
                    if old_rev:
                        ann[REVISION_HISTORY] = ",".join([*history, str(old_rev)])
                    ann[REVISION] = str(revision)
                    return {**o, "metadata": {**o["metadata"], "annotations": ann}}

                with contextlib.suppress(ApiError):
                    new = self.client.patch("ReplicaSet", *key_of(new), bump)
            self._set_deployment_revision(d, _revision(new))
            return new
        template = (d.get("spec") or {}).get("template") or {}
        collision = int((d.get("status") or {}).get("collisionCount") or 0)
        h = template_hash(_without_hash(template), collision)
        tmeta = dict(template.get("metadata") or {})
        tmeta["labels"] = {**(tmeta.get("labels") or {}), HASH_LABEL: h}
        selector = dict((d.get("spec") or {}).get("selector") or {})
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), HASH_LABEL: h}
        name = f"{d['metadata']['name']}-{h}"
        rs = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "namespace": d["metadata"].get("namespace") or "default",
                "labels": dict(tmeta["labels"]),
                "annotations": self._annotations(d, revision),
                "ownerReferences": [owner_reference(d)],
            },
            "spec": {
                "replicas": replicas,
                "minReadySeconds": int((d.get("spec") or {}).get("minReadySeconds") or 0),
                "selector": selector,
                "template": {**template, "metadata": tmeta},
            },
        }
        try:
            created = self.client.create("ReplicaSet", rs)
        except AlreadyExists:
            existing = self.client.get("ReplicaSet", d["metadata"].get("namespace") or "default", name)
            ref = controller_of(existing) if existing is not None else None
            if existing is not None and ref is not None and ref.get("uid") == d["metadata"]["uid"]:
                self.index.apply_created("ReplicaSet", existing)
                return existing
            # a hash collision with a ReplicaSet of another template: count it and retry later
            self.client.patch(
                self.kind,
                *key_of(d),
                lambda o: {**o, "status": {**(o.get("status") or {}), "collisionCount": collision + 1}},
            )
            self.requeue_after(key_of(d), 0)
            return None
        except ApiError as err:
            self.recorder.event(d, "Warning", "FailedCreate", f"Failed to create new replica set {name!r}: {err}")
            return None
        self.index.apply_created("ReplicaSet", created)
        self.recorder.event(d, "Normal", "ScalingReplicaSet", f"Scaled up replica set {name} from 0 to {replicas}")
        self._set_deployment_revision(d, revision, created_rs=name)
        return created

    def _set_deployment_revision(self, d: dict[str, Any], revision: int, created_rs: str = "") -> None:
        now = rfc3339(self.client.clock.now())

        def put(o: dict[str, Any]) -> dict[str, Any]:
            ann = dict(o["metadata"].get("annotations") or {})
            ann[REVISION] = str(revision)
            status = dict(o.get("status") or {})
            if created_rs:
                _set_condition(
                    status,
                    "Progressing",
                    "True",
                    "NewReplicaSetCreated",
                    f'Created new replica set "{created_rs}"',
                    now,
                )
            return {**o, "metadata": {**o["metadata"], "annotations": ann}, "status": status}

        current = ((d.get("metadata") or {}).get("annotations") or {}).get(REVISION)
        if current != str(revision) or created_rs:
            with contextlib.suppress(ApiError):
                self.client.patch(self.kind, *key_of(d), put)

    def _scale_rs(self, d: dict[str, Any], rs: dict[str, Any], replicas: int) -> dict[str, Any]:
        """``scaleReplicaSet``: the new size and the replicas annotations, one write; an event
        when the size changes."""
        old = _replicas(rs)
        annotations = self._annotations(d, None)
        current = (rs.get("metadata") or {}).get("annotations") or {}
        if old == replicas and all(current.get(k) == annotations[k] for k in (DESIRED_REPLICAS, MAX_REPLICAS)):
            return rs

        def put(o: dict[str, Any]) -> dict[str, Any]:
            ann = {**(o["metadata"].get("annotations") or {})}
            ann[DESIRED_REPLICAS], ann[MAX_REPLICAS] = annotations[DESIRED_REPLICAS], annotations[MAX_REPLICAS]
            return {**o, "metadata": {**o["metadata"], "annotations": ann}, "spec": {**o["spec"], "replicas": replicas}}

        try:
            scaled = self.client.patch("ReplicaSet", *key_of(rs), put)
        except ApiError:
            return rs
        if old != replicas:
            way = "up" if replicas > old else "down"
            self.recorder.event(
                d,
                "Normal",
                "ScalingReplicaSet",
                f"Scaled {way} replica set {rs['metadata']['name']} from {old} to {replicas}",
            )
        return scaled

    # -- strategies ----------------------------------------------------------------------------
    def _rolling(
        self, d: dict[str, Any], new: dict[str, Any] | None, olds: list[dict[str, Any]]
    ) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """``rolloutRolling``: scale the new ReplicaSet up within maxSurge, then the old ones
        down within maxUnavailable."""
        replicas = _replicas(d)
        surge, unavailable = fenceposts(d)
        if new is None:
            current = sum(_replicas(rs) for rs in olds)
            count = max(0, min(replicas + surge - current, replicas))
            new = self._get_or_create_new(d, None, olds, count)
            return new, olds
        new = self._get_or_create_new(d, new, olds, _replicas(new)) or new
        # reconcileNewReplicaSet
        have = _replicas(new)
        if have > replicas:
            self._scale_rs(d, new, replicas)
            return new, olds
        if have < replicas:
            current = have + sum(_replicas(rs) for rs in olds)
            if current < replicas + surge:
                target = have + min(replicas + surge - current, replicas - have)
                self._scale_rs(d, new, target)
                return new, olds
        # reconcileOldReplicaSets
        old_count = sum(_replicas(rs) for rs in olds)
        if old_count == 0:
            return new, olds
        all_count = old_count + _replicas(new)
        min_available = replicas - unavailable
        new_unavailable = _replicas(new) - _st(new, "availableReplicas")
        budget = all_count - min_available - new_unavailable
        if budget <= 0:
            return new, olds
        olds = sorted(olds, key=_created)
        cleaned = 0
        for i, rs in enumerate(olds):  # cleanupUnhealthyReplicas
            if cleaned >= budget:
                break
            size, avail = _replicas(rs), _st(rs, "availableReplicas")
            if size == 0 or size == avail:
                continue
            down = min(budget - cleaned, size - avail)
            olds[i] = self._scale_rs(d, rs, size - down)
            cleaned += down
        available = _st(new, "availableReplicas") + sum(_st(rs, "availableReplicas") for rs in olds)
        if available <= min_available:  # scaleDownOldReplicaSetsForRollingUpdate
            return new, olds
        total, done = available - min_available, 0
        for i, rs in enumerate(olds):
            if done >= total:
                break
            size = _replicas(rs)
            if size == 0:
                continue
            down = min(size, total - done)
            olds[i] = self._scale_rs(d, rs, size - down)
            done += down
        return new, olds

    def _recreate(
        self, d: dict[str, Any], new: dict[str, Any] | None, olds: list[dict[str, Any]]
    ) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """``rolloutRecreate``: every old pod gone before the new ReplicaSet scales up."""
        for rs in olds:
            if _replicas(rs):
                self._scale_rs(d, rs, 0)
        if any(_st(rs, "replicas") for rs in olds):
            return new, olds
        old_pods = [p for rs in olds for p in self.index.owned("Pod", rs["metadata"]["uid"])]
        if any((p.get("status") or {}).get("phase") not in ("Succeeded", "Failed") for p in old_pods):
            return new, olds
        new = self._get_or_create_new(d, new, olds, _replicas(d))
        if new is not None and _replicas(new) != _replicas(d):
            new = self._scale_rs(d, new, _replicas(d))
        return new, olds

    def _scale(self, d: dict[str, Any], new: dict[str, Any] | None, olds: list[dict[str, Any]]) -> None:
        """``scale``: a size change outside a rollout goes to the one active ReplicaSet, or is
        shared among the active ones in proportion to their size (``GetProportion``)."""
        if new is not None and not (d.get("spec") or {}).get("paused"):
            new = self._get_or_create_new(d, new, olds, _replicas(new)) or new
        replicas = _replicas(d)
        rss = ([new] if new is not None else []) + olds
        active = [rs for rs in rss if _replicas(rs) > 0]
        if len(active) <= 1:
            target = active[0] if active else (new or (max(olds, key=_created) if olds else None))
            if target is not None:
                self._scale_rs(d, target, replicas)
            return
        if new is not None and _replicas(new) == replicas and _st(new, "availableReplicas") == replicas:
            for rs in olds:
                self._scale_rs(d, rs, 0)
            return
        surge, _ = fenceposts(d)
        allowed = replicas + surge
        total = sum(_replicas(rs) for rs in active)
        to_add = allowed - total
        if to_add == 0:
            for rs in active:
                self._scale_rs(d, rs, _replicas(rs))
            return
        # the largest first (newest breaks ties) when growing, the smallest oldest when shrinking
        if to_add > 0:
            active.sort(key=lambda rs: (-_replicas(rs), -_created(rs)[0], _created(rs)[1]))
        else:
            active.sort(key=lambda rs: (-_replicas(rs), _created(rs)))
        sizes: dict[str, int] = {}
        added = 0
        for rs in active:
            ann = (rs.get("metadata") or {}).get("annotations") or {}
            try:
                annotated = int(ann.get(MAX_REPLICAS) or 0)
            except ValueError:
                annotated = 0
            annotated = annotated or _st(d, "replicas") or total
            size = _replicas(rs)
            # getReplicaSetFraction: the size this ReplicaSet would have at the new total, rounded
            # half away from zero as Go's math.Round
            fraction = -size if replicas == 0 else math.floor(size * allowed / annotated + 0.5) - size
            room = to_add - added
            step = min(fraction, room) if to_add > 0 else max(fraction, room)
            sizes[rs["metadata"]["name"]] = size + step
            added += step
        leftover = to_add - added
        first = active[0]["metadata"]["name"]
        sizes[first] = max(0, sizes[first] + leftover)
        for rs in active:
            self._scale_rs(d, rs, sizes[rs["metadata"]["name"]])

    def _cleanup(self, d: dict[str, Any], olds: list[dict[str, Any]]) -> None:
        """``cleanupDeployment``: old ReplicaSets with no pods beyond revisionHistoryLimit."""
        limit = int((d.get("spec") or {}).get("revisionHistoryLimit", 10))
        idle = [
            rs
            for rs in olds
            if _replicas(rs) == 0 and _st(rs, "replicas") == 0 and not rs["metadata"].get("deletionTimestamp")
        ]
        idle.sort(key=lambda rs: (_revision(rs), _created(rs)))
        for rs in idle[: max(0, len(olds) - limit)]:
            with contextlib.suppress(ApiError):
                self.client.delete("ReplicaSet", *key_of(rs), uid=rs["metadata"]["uid"])

    # -- status --------------------------------------------------------------------------------
    @staticmethod
    def _complete(d: dict[str, Any], new: dict[str, Any], olds: list[dict[str, Any]]) -> bool:
        replicas = _replicas(d)
        rss = [new, *olds]
        return (
            _st(new, "replicas") == replicas
            and sum(_st(rs, "replicas") for rs in rss) == replicas
            and sum(_st(rs, "availableReplicas") for rs in rss) == replicas
        )

    def _sync_status(self, d: dict[str, Any], new: dict[str, Any] | None, olds: list[dict[str, Any]]) -> None:
        """``syncRolloutStatus`` / ``calculateStatus``."""
        rss = ([new] if new is not None else []) + olds
        replicas = _replicas(d)
        _, unavailable = fenceposts(d)
        available = sum(_st(rs, "availableReplicas") for rs in rss)
        total = sum(_replicas(rs) for rs in rss)
        old_status = d.get("status") or {}
        status: dict[str, Any] = {
            "observedGeneration": d["metadata"].get("generation", 1),
            "replicas": sum(_st(rs, "replicas") for rs in rss),
            "updatedReplicas": _st(new, "replicas") if new is not None else 0,
            "readyReplicas": sum(_st(rs, "readyReplicas") for rs in rss),
            "availableReplicas": available,
            "unavailableReplicas": max(0, total - available),
            "conditions": [dict(c) for c in old_status.get("conditions") or []],
        }
        if old_status.get("collisionCount") is not None:
            status["collisionCount"] = old_status["collisionCount"]
        now_s = self.client.clock.now()
        now = rfc3339(now_s)
        if available >= replicas - unavailable:
            _set_condition(
                status, "Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability.", now
            )
        else:
            _set_condition(
                status,
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
                now,
            )
        spec = d.get("spec") or {}
        deadline = spec.get("progressDeadlineSeconds", 600)
        current = _condition(old_status, "Progressing")
        if spec.get("paused"):
            _set_condition(status, "Progressing", "Unknown", "DeploymentPaused", "Deployment is paused", now)
        elif current is not None and current.get("reason") == "DeploymentPaused":
            _set_condition(status, "Progressing", "Unknown", "DeploymentResumed", "Deployment is resumed", now)
        elif deadline is not None:
            complete = (
                status["replicas"] == status["updatedReplicas"]
                and current is not None
                and current.get("reason") == "NewReplicaSetAvailable"
            )
            rs_name = new["metadata"]["name"] if new is not None else ""
            if not complete:
                if (
                    new is not None
                    and status["updatedReplicas"] == replicas
                    and status["replicas"] == replicas
                    and available == replicas
                ):
                    _set_condition(
                        status,
                        "Progressing",
                        "True",
                        "NewReplicaSetAvailable",
                        f'ReplicaSet "{rs_name}" has successfully progressed.',
                        now,
                    )
                elif self._progressing(old_status, status):
                    message = (
                        f'ReplicaSet "{rs_name}" is progressing.' if new is not None else "Deployment is progressing."
                    )
                    conds = [c for c in status["conditions"] if c.get("type") != "Progressing"]
                    cond = {
                        "type": "Progressing",
                        "status": "True",
                        "lastUpdateTime": now,
                        "lastTransitionTime": (current or {}).get("lastTransitionTime", now)
                        if (current or {}).get("status") == "True"
                        else now,
                        "reason": "ReplicaSetUpdated",
                        "message": message,
                    }
                    status["conditions"] = [*conds, cond]
                elif current is not None and current.get("status") == "True" and current.get("lastUpdateTime"):
                    due = parse_rfc3339(current["lastUpdateTime"]) + int(deadline)
                    if now_s >= due:
                        _set_condition(
                            status,
                            "Progressing",
                            "False",
                            "ProgressDeadlineExceeded",
                            f'ReplicaSet "{rs_name}" has timed out progressing.',
                            now,
                        )
                    else:
                        self.requeue_after(key_of(d), due - now_s)
        status = {k: v for k, v in status.items() if v or k in ("observedGeneration", "conditions")}
        write_status(self.client, self.kind, d, status)

    @staticmethod
    def _progressing(old: dict[str, Any], new: dict[str, Any]) -> bool:
        """``DeploymentProgressing``: more updated, ready or available replicas, or fewer old ones."""
        old_old = int(old.get("replicas") or 0) - int(old.get("updatedReplicas") or 0)
        new_old = new["replicas"] - new["updatedReplicas"]
        return (
            new["updatedReplicas"] > int(old.get("updatedReplicas") or 0)
            or new_old < old_old
            or new["readyReplicas"] > int(old.get("readyReplicas") or 0)
            or new["availableReplicas"] > int(old.get("availableReplicas") or 0)
        )
