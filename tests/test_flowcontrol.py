"""API Priority and Fairness's configuration at work (``apiserver/flowcontrol``): the bootstrap
ensurer's rounds (what it creates, puts back, leaves and deletes), a schema naming a missing level
skipped and marked Dangling, and the dispatcher's levels: a flood in one level leaves another's
seats free, a Reject level has no queue. (What kube-apiserver decides about the same objects and
requests is compared in tests/test_upstream_flowcontrol.py.)"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kubesched.apiserver.auth.rbac import UserInfo
from kubesched.apiserver.auth.requestinfo import request_attributes
from kubesched.apiserver.filters.fairness import Fairness, FairnessSettings
from kubesched.apiserver.flowcontrol.classify import FlowControl
from kubesched.apiserver.flowcontrol.ensurer import AUTOUPDATE, ensure
from kubesched.cluster.store import Store
from kubesched.embedded.cluster import EmbeddedCluster

FS = "FlowSchema"
PL = "PriorityLevelConfiguration"


@pytest.fixture
def store() -> Store:
    cluster = EmbeddedCluster(config=None, controllers=(), start=False)
    ensure(cluster.store)
    return cluster.store


def spec_of(store: Store, kind: str, name: str) -> dict[str, Any]:
    return store.get(kind, "", name)["spec"]


def edit(store: Store, kind: str, name: str, annotation: str | None, **spec: Any) -> None:
    obj = store.get(kind, "", name)
    meta = dict(obj["metadata"])
    annotations = dict(meta.get("annotations") or {})
    if annotation is None:
        annotations.pop(AUTOUPDATE, None)
    else:
        annotations[AUTOUPDATE] = annotation
    meta["annotations"] = annotations
    store.update(kind, {**obj, "metadata": meta, "spec": {**obj["spec"], **spec}})


def test_the_first_round_makes_every_bootstrap_object(store: Store) -> None:
    assert sorted(o["metadata"]["name"] for o in store.list(PL)[0]) == [
        "catch-all",
        "exempt",
        "global-default",
        "leader-election",
        "node-high",
        "system",
        "workload-high",
        "workload-low",
    ]
    assert len(store.list(FS)[0]) == 11
    assert all(o["metadata"]["annotations"] == {AUTOUPDATE: "true"} for o in store.list(FS)[0])


@pytest.mark.parametrize(
    ("annotation", "generation_two", "put_back", "annotated"),
    [
        ("true", False, True, "true"),  # auto-updated: the spec comes back
        ("false", False, False, "false"),  # the operator's: kept
        (None, False, True, "true"),  # no annotation at generation 1: still the bootstrap's
        (None, True, False, "false"),  # no annotation, edited since: the operator's, now said so
    ],
)
def test_a_suggested_schema_is_put_back_only_when_it_says_so(
    store: Store, annotation: str | None, generation_two: bool, put_back: bool, annotated: str
) -> None:
    if generation_two:
        edit(store, FS, "service-accounts", "true", matchingPrecedence=8999)  # generation 2
    edit(store, FS, "service-accounts", annotation, matchingPrecedence=8000)
    if not generation_two:  # back to generation 1, as an object created by hand would be
        store.mutate(
            FS,
            "",
            "service-accounts",
            lambda o: {**o, "metadata": {**o["metadata"], "generation": 1}},
            generation=False,
        )
    ensure(store)
    obj = store.get(FS, "", "service-accounts")
    assert obj["spec"]["matchingPrecedence"] == (9000 if put_back else 8000)
    assert obj["metadata"]["annotations"][AUTOUPDATE] == annotated


def test_mandatory_and_deleted_objects_come_back_and_stale_ones_go(store: Store) -> None:
    store.delete(FS, "", "global-default")
    store.delete(PL, "", "catch-all")
    stale = {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": FS, "spec": spec_of(store, FS, "probes")}
    store.create(FS, {**stale, "metadata": {"name": "from-an-old-release", "annotations": {AUTOUPDATE: "true"}}})
    store.create(FS, {**stale, "metadata": {"name": "an-operators"}})
    ensure(store)
    names = {o["metadata"]["name"] for o in store.list(FS)[0]}
    assert "global-default" in names and "an-operators" in names
    assert "from-an-old-release" not in names
    assert store.try_get(PL, "", "catch-all") is not None


def attrs(user: str, path: str, *groups: str, method: str = "GET") -> Any:
    return request_attributes(UserInfo(user, groups=(*groups, "system:authenticated")), method, path, {})


def test_a_schema_naming_a_missing_level_is_skipped_and_dangling(store: Store) -> None:
    fc = FlowControl(store, 49)
    fc.start()
    rule = {
        "subjects": [{"kind": "User", "user": {"name": "alice"}}],
        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
    }
    for name, level in (("alice-first", "nowhere"), ("alice-next", "workload-low")):
        store.create(
            FS,
            {
                "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
                "kind": FS,
                "metadata": {"name": name},
                "spec": {"priorityLevelConfiguration": {"name": level}, "matchingPrecedence": 50, "rules": [rule]},
            },
        )
    got = fc.classify(attrs("alice", "/version"))
    assert (got.schema, got.level.name, got.flow) == ("alice-next", "workload-low", "alice-next/")
    fc.write_conditions()
    (dangling,) = store.get(FS, "", "alice-first")["status"]["conditions"]
    assert (dangling["status"], dangling["reason"]) == ("True", "NotFound")
    assert dangling["message"] == (
        'This FlowSchema references the PriorityLevelConfiguration object named "nowhere" but there is no such object'
    )
    # the level made: found, the schema takes alice's requests
    store.create(
        PL,
        {
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": PL,
            "metadata": {"name": "nowhere"},
            "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}},
        },
    )
    assert fc.classify(attrs("alice", "/version")).level.name == "nowhere"
    fc.write_conditions()
    assert store.get(FS, "", "alice-first")["status"]["conditions"][0]["reason"] == "Found"


def test_each_level_has_its_share_of_the_seats(store: Store) -> None:
    fc = FlowControl(store, 49)
    fc.digest()
    seats = {name: level.seats for name, level in fc.levels.items()}
    # nominal concurrency limits: ceil(49 * shares / 245)
    assert seats == {
        "catch-all": 1,
        "exempt": 0,
        "global-default": 4,
        "leader-election": 2,
        "node-high": 8,
        "system": 6,
        "workload-high": 8,
        "workload-low": 20,
    }


def test_a_tenants_flood_leaves_the_schedulers_level_its_seats(store: Store) -> None:
    """A tenant fills global-default's four seats and queues 40 more; the scheduler's request
    (workload-high) is seated at once, ahead of every queued request of the tenant."""
    fc = FlowControl(store, 49)

    async def main() -> tuple[list[str], bool]:
        fair = Fairness(FairnessSettings())
        order: list[str] = []
        hold = asyncio.Event()

        async def request(who: str, path: str, *groups: str) -> None:
            c = fc.classify(attrs(who, path, *groups))
            pool = fair.pool(c.level.name, c.level.seats, c.level.queue_length)
            assert await fair.acquire(c.flow, pool)
            order.append(who)
            if who == "tenant":
                await hold.wait()
            fair.release(pool)

        async def until(done: Any) -> None:
            for _ in range(100):
                if done():
                    return
                await asyncio.sleep(0)

        flood = [asyncio.create_task(request("tenant", "/api/v1/namespaces/t/pods")) for _ in range(44)]
        await until(lambda: len(order) == 4)
        scheduler = asyncio.create_task(request("system:kube-scheduler", "/api/v1/pods"))
        await until(lambda: "system:kube-scheduler" in order)
        seated_first = order == ["tenant"] * 4 + ["system:kube-scheduler"]
        hold.set()
        await asyncio.gather(*flood, scheduler)
        return order, seated_first

    order, seated_first = asyncio.run(main())
    assert seated_first
    assert len(order) == 45


def test_a_reject_level_refuses_at_once_when_its_seats_are_taken() -> None:
    async def main() -> list[bool]:
        fair = Fairness(FairnessSettings(wait_limit=5))
        pool = fair.pool("catch-all", 1, 0)
        first = await fair.acquire("a", pool)
        second = await asyncio.wait_for(fair.acquire("b", pool), 0.5)  # no queue: no wait
        fair.release(pool)
        third = await fair.acquire("b", pool)
        return [first, second, third]

    assert asyncio.run(main()) == [True, False, True]


def test_a_stored_schema_that_cannot_be_read_sends_requests_to_catch_all(store: Store) -> None:
    """An object written past validation (an older data directory): requests are still served."""
    store.mutate(
        FS,
        "",
        "global-default",
        lambda o: {**o, "metadata": dict(o["metadata"]), "spec": {**o["spec"], "rules": ["not a rule"]}},
    )
    fc = FlowControl(store, 49)
    got = fc.classify(attrs("alice", "/api/v1/pods"))
    assert (got.schema, got.level.name, got.flow) == ("catch-all", "catch-all", "catch-all/alice")


def test_the_exempt_levels_own_shares_are_left_to_the_operator(store: Store) -> None:
    """plcSpecEqualish: spec.exempt is not put back; the rest of a mandatory spec is."""
    edit(store, PL, "exempt", "true", exempt={"nominalConcurrencyShares": 3, "lendablePercent": 10})
    edit(store, PL, "catch-all", "true", limited={**spec_of(store, PL, "catch-all")["limited"], "lendablePercent": 10})
    ensure(store)
    assert spec_of(store, PL, "exempt")["exempt"] == {"nominalConcurrencyShares": 3, "lendablePercent": 10}
    assert spec_of(store, PL, "catch-all")["limited"]["lendablePercent"] == 0


def test_the_loop_writes_conditions_on_change_and_retries_a_failed_round_a_second_later(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kubesched.apiserver.flowcontrol import classify
    from kubesched.health import LoopHealth

    async def main() -> tuple[str, int, int]:
        health = LoopHealth()
        fc = FlowControl(store, 49)
        fc.start()
        stop = asyncio.Event()
        task = asyncio.create_task(fc.run(stop, health))
        await asyncio.sleep(0.05)
        store.create(
            FS,
            {
                "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
                "kind": FS,
                "metadata": {"name": "late"},
                "spec": {
                    "priorityLevelConfiguration": {"name": "missing"},
                    "rules": [
                        {
                            "subjects": [{"kind": "User", "user": {"name": "x"}}],
                            "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/x"]}],
                        }
                    ],
                },
            },
        )
        await asyncio.sleep(0.05)  # woken by the change, not by the 30 s period
        reason = store.get(FS, "", "late")["status"]["conditions"][0]["reason"]
        healthy_errors = health.loops[classify.LOOP].errors

        def broken(_: Store) -> None:
            raise RuntimeError("store unavailable")

        monkeypatch.setattr(classify, "ensure", broken)
        monkeypatch.setattr(classify, "RETRY", 0.1)
        fc2 = FlowControl(store, 49)
        task2 = asyncio.create_task(fc2.run(stop, health))
        await asyncio.sleep(0.35)
        stop.set()
        for running in (fc, fc2):
            if running.wake is not None:
                running.wake.set()
        await asyncio.gather(task, task2)
        return reason, healthy_errors, health.loops[classify.LOOP].errors

    reason, before, after = asyncio.run(main())
    assert reason == "NotFound" and before == 0
    assert 3 <= after <= 5  # one failed round each 0.1 s, not a spin
