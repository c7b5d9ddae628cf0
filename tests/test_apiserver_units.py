"""Tables for the API server's pure parts: strategic merge / JSON patch directives, label and
field selector parsing, upstream's HumanDuration, and the Store's revision log (compaction,
410, durable reload)."""

from __future__ import annotations

import pytest

from kubesched.api.errors import BadRequest, Expired, Invalid
from kubesched.api.fields import fields_match, parse_field_selector
from kubesched.api.labels import labels_match, parse_label_selector
from kubesched.apiserver.handlers.patch import json_patch, merge_patch, strategic_merge_patch
from kubesched.apiserver.handlers.tables import human_duration
from kubesched.clock import VirtualClock
from kubesched.cluster.sqlite import SQLiteBackend
from kubesched.cluster.store import StorageError, Store

POD = {
    "metadata": {"labels": {"a": "1"}, "finalizers": ["x"]},
    "spec": {"containers": [{"name": "c", "image": "v1"}, {"name": "d", "image": "v1"}], "tolerations": [{"key": "t"}]},
    "status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"}]},
}


@pytest.mark.parametrize(
    ("patch", "check"),
    [
        (
            {"spec": {"containers": [{"name": "d", "image": "v2"}]}},
            lambda o: o["spec"]["containers"] == [{"name": "c", "image": "v1"}, {"name": "d", "image": "v2"}],
        ),
        (
            {"spec": {"containers": [{"name": "c", "$patch": "delete"}]}},
            lambda o: [c["name"] for c in o["spec"]["containers"]] == ["d"],
        ),
        (
            {"spec": {"containers": [{"name": "e", "image": "v1"}, {"$patch": "replace"}]}},
            lambda o: [c["name"] for c in o["spec"]["containers"]] == ["e"],
        ),
        ({"spec": {"tolerations": [{"key": "u"}]}}, lambda o: o["spec"]["tolerations"] == [{"key": "u"}]),
        (
            {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
            lambda o: (
                [(c["type"], c["status"]) for c in o["status"]["conditions"]]
                == [("Ready", "True"), ("PodScheduled", "True")]
            ),
        ),
        # normalizeElementOrder: the patch's items in the patch's order (kube-apiserver agrees:
        # tests/test_upstream_kubectl_session.py)
        ({"metadata": {"finalizers": ["y", "x"]}}, lambda o: o["metadata"]["finalizers"] == ["y", "x"]),
        (
            {"spec": {"containers": [{"name": "z", "image": "v"}]}},
            lambda o: [c["name"] for c in o["spec"]["containers"]] == ["z", "c", "d"],
        ),
        ({"metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]}}, lambda o: o["metadata"]["finalizers"] == []),
        (
            {"spec": {"$setElementOrder/containers": [{"name": "d"}, {"name": "c"}], "containers": [{"name": "c"}]}},
            lambda o: [c["name"] for c in o["spec"]["containers"]] == ["d", "c"],
        ),
        ({"metadata": {"labels": {"a": None}}}, lambda o: o["metadata"]["labels"] == {}),
        ({"spec": {"$patch": "replace", "containers": []}}, lambda o: o["spec"] == {"containers": []}),
        ({"status": {"$retainKeys": ["phase"], "phase": "Running"}}, lambda o: o["status"] == {"phase": "Running"}),
    ],
)
def test_strategic_merge_patch(patch, check):
    out = strategic_merge_patch(POD, patch)
    assert check(out)
    assert POD["spec"]["containers"][1]["image"] == "v1"  # the original is untouched


def test_merge_and_json_patch():
    assert merge_patch({"a": {"b": 1, "c": 2}, "l": [1]}, {"a": {"b": None}, "l": [2]}) == {"a": {"c": 2}, "l": [2]}
    doc = {"a": [1, 2], "b": {"c": 1}}
    ops = [
        {"op": "add", "path": "/a/-", "value": 3},
        {"op": "move", "from": "/b/c", "path": "/d"},
        {"op": "copy", "from": "/d", "path": "/e"},
        {"op": "test", "path": "/e", "value": 1},
        {"op": "remove", "path": "/a/0"},
        {"op": "replace", "path": "/b", "value": "x"},
    ]
    assert json_patch(doc, ops) == {"a": [2, 3], "b": "x", "d": 1, "e": 1}
    assert doc == {"a": [1, 2], "b": {"c": 1}}  # patched on a copy


@pytest.mark.parametrize(
    ("ops", "error", "message"),
    [
        ([{"op": "test", "path": "/a/0", "value": 9}], Invalid, "the server rejected our request due to an error"),
        ([{"op": "add", "path": "a", "value": 1}], Invalid, "the server rejected our request due to an error"),
        ([{"op": "replace", "path": "/missing", "value": 1}], Invalid, "the server rejected our request"),
        ([{"op": "remove", "path": "/a/7"}], Invalid, "the server rejected our request"),
        ([{"op": "move", "from": "/nope", "path": "/x"}], Invalid, "the server rejected our request"),
        ([{"op": "add", "path": "/x"}], Invalid, "the server rejected our request"),
        ([{"op": "frobnicate", "path": "/x"}], Invalid, "the server rejected our request"),
        ({"op": "add"}, BadRequest, "json: cannot unmarshal object into Go value of type jsonpatch.Patch"),
        ([1], BadRequest, "json: cannot unmarshal number into Go value of type jsonpatch.Operation"),
    ],
)
def test_a_json_patch_that_cannot_apply_is_refused_and_changes_nothing(ops, error, message):
    doc = {"a": [1, 2], "b": {"c": 1}}
    with pytest.raises(error, match=message) as raised:
        json_patch(doc, ops)
    assert doc == {"a": [1, 2], "b": {"c": 1}}
    if error is Invalid:
        # kube-apiserver v1.37.2 writes empty details, the reason only in its log
        assert raised.value.code == 422 and raised.value.status()["details"] == {}


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ("app=web", {"app": "web"}, True),
        ("app==web", {"app": "db"}, False),
        ("app!=web", {}, True),
        ("app in (web, db),tier", {"app": "db", "tier": "x"}, True),
        ("app notin (web)", {"app": "web"}, False),
        ("!app", {"app": "web"}, False),
        ("example.com/role", {"example.com/role": ""}, True),
        ("", {"anything": "x"}, True),
        ("app=", {"app": ""}, True),
        ("app=", {}, False),
    ],
)
def test_label_selectors(selector, labels, expected):
    assert labels_match(parse_label_selector(selector), {"metadata": {"labels": labels}}) is expected


@pytest.mark.parametrize("selector", ["a b", "app in ()", "app===x", ",", "Bad Key=x", "app=" + "v" * 64])
def test_bad_label_selectors(selector):
    with pytest.raises(BadRequest, match="unable to parse requirement"):
        parse_label_selector(selector)


def test_field_selectors():
    pod = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": ""}, "status": {"phase": "Running"}}
    assert fields_match(parse_field_selector("spec.nodeName=,status.phase!=Failed", "Pod"), pod)
    assert not fields_match(parse_field_selector("metadata.name==q", "Pod"), pod)
    event = {"involvedObject": {"name": "p", "namespace": ""}, "reportingComponent": "default-scheduler"}
    assert fields_match(
        parse_field_selector("regarding.name=p,reportingController=default-scheduler", "Event", events_v1=True), event
    )
    with pytest.raises(BadRequest, match=r"field label not supported: spec\.nodeName"):
        parse_field_selector("spec.nodeName=x", "Node")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-5, "<invalid>"),
        (-0.5, "0s"),
        (59, "59s"),
        (119, "119s"),
        (125, "2m5s"),
        (600, "10m"),
        (3 * 3600, "3h"),
        (3 * 3600 + 120, "3h2m"),
        (10 * 3600, "10h"),
        (50 * 3600, "2d2h"),
        (30 * 86400, "30d"),
        (3 * 365 * 86400, "3y"),
        (10 * 365 * 86400, "10y"),
    ],
)
def test_human_duration(seconds, text):
    assert human_duration(seconds) == text


def _cm(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}}


def test_store_compaction_and_durable_reload(tmp_path):
    store = Store(VirtualClock(), seed=None, backend=SQLiteBackend(tmp_path / "s.db"), history=3)
    store.compact_every = 2
    rvs = [int(store.create("ConfigMap", _cm(f"c{i}"))["metadata"]["resourceVersion"]) for i in range(6)]
    store.delete("ConfigMap", "default", "c0")
    with pytest.raises(Expired, match=f"too old resource version: {rvs[0]}"):
        store.watch(["ConfigMap"], rvs[0])
    replay = store.watch(["ConfigMap"], rvs[4]).drain()
    assert [(e.type, e.obj["metadata"]["name"]) for e in replay] == [("ADDED", "c5"), ("DELETED", "c0")]
    store.close()
    again = Store(VirtualClock(), seed=None, backend=SQLiteBackend(tmp_path / "s.db"), history=3)
    assert sorted(o["metadata"]["name"] for o in again.list("ConfigMap")[0]) == [f"c{i}" for i in range(1, 6)]
    assert again.resource_version == rvs[-1] + 1
    assert [e.obj["metadata"]["name"] for e in again.watch(["ConfigMap"], rvs[4]).drain()] == ["c5", "c0"]
    with pytest.raises(Expired):
        again.watch(["ConfigMap"], rvs[0])
    assert int(again.create("ConfigMap", _cm("n"))["metadata"]["resourceVersion"]) == rvs[-1] + 2


@pytest.mark.parametrize(
    ("kind", "obj", "generation"),
    [
        ("Pod", {"metadata": {"name": "p", "namespace": "default"}, "spec": {"containers": []}}, 1),
        ("PodDisruptionBudget", {"metadata": {"name": "b", "namespace": "default"}, "spec": {"minAvailable": 1}}, 1),
        ("Lease", {"metadata": {"name": "l", "namespace": "default"}, "spec": {"holderIdentity": "a"}}, None),
        ("Node", {"metadata": {"name": "n"}, "spec": {}}, None),
    ],
)
def test_generation_only_for_kinds_whose_strategy_keeps_one(kind, obj, generation):
    """kube-apiserver sets metadata.generation for pods and the workload kinds, not for a Lease or
    a Node; a spec change bumps it."""
    store = Store(VirtualClock())
    created = store.create(kind, obj)
    assert created["metadata"].get("generation") == generation
    ns = created["metadata"].get("namespace", "")
    changed = store.mutate(kind, ns, obj["metadata"]["name"], lambda o: {**o, "spec": {**o["spec"], "x": 1}})
    assert changed["metadata"].get("generation") == (None if generation is None else generation + 1)


def test_group_commit_holds_writes_until_the_scheduled_flush(tmp_path):
    """Under an event loop the store commits the writes of one iteration together: nothing is
    in the file (or seen by a watcher) before ``commit``, everything after, and close flushes first."""
    scheduled: list[int] = []
    backend = SQLiteBackend(tmp_path / "s.db")
    store = Store(VirtualClock(), backend=backend)
    store.commit_soon = lambda: scheduled.append(1)
    watch = store.watch(["Namespace"])
    store.create("Namespace", {"metadata": {"name": "a"}})
    store.create("Namespace", {"metadata": {"name": "b"}})
    assert scheduled == [1]  # one commit asked for the batch
    assert store.pending() and backend.pending() and not watch
    assert SQLiteBackend(tmp_path / "s.db").load().objects == []
    store.commit()
    assert not store.pending() and not backend.pending()
    assert [ev.obj["metadata"]["name"] for ev in watch.drain()] == ["a", "b"]
    names = sorted(o["metadata"]["name"] for _, o in SQLiteBackend(tmp_path / "s.db").load().objects)
    assert {"a", "b"} <= set(names)
    store.create("Namespace", {"metadata": {"name": "c"}})
    assert scheduled == [1, 1]
    store.close()
    assert "c" in {o["metadata"]["name"] for _, o in SQLiteBackend(tmp_path / "s.db").load().objects}


def test_a_watch_from_a_revision_opened_before_a_commit_gets_each_write_once_and_only_once_committed(tmp_path):
    """A watch from a past revision replays the committed log; writes still waiting for the group
    commit reach it when they commit, once, as they reach every other watcher. (Replaying them
    too gave a watcher opened between a write and its commit that event twice, and a rolled-back
    one it should never have seen.)"""
    backend = SQLiteBackend(tmp_path / "s.db")
    store = Store(VirtualClock(), backend=backend)
    store.commit_soon = lambda: None
    first = store.create("Namespace", {"metadata": {"name": "a"}})
    store.commit()
    rv = int(first["metadata"]["resourceVersion"])
    store.create("Namespace", {"metadata": {"name": "b"}})  # written, not yet committed
    store.create("Namespace", {"metadata": {"name": "c"}})
    watch = store.watch(["Namespace"], rv - 1)
    assert [ev.obj["metadata"]["name"] for ev in watch.drain()] == ["a"]  # committed only
    store.commit()
    assert [ev.obj["metadata"]["name"] for ev in watch.drain()] == ["b", "c"]
    store.create("Namespace", {"metadata": {"name": "d"}})
    late = store.watch(["Namespace"], rv)
    pages = backend._db.execute("PRAGMA page_count").fetchone()[0]
    backend._db.execute(f"PRAGMA max_page_count = {pages}")
    store.create("Namespace", {"metadata": {"name": "big", "annotations": {"x": "y" * 20_000}}})
    with pytest.raises(StorageError):
        store.commit()  # d and big roll back: no watcher saw either
    assert [ev.obj["metadata"]["name"] for ev in late.drain()] == ["b", "c"]
    assert not watch
    store.close()


@pytest.mark.parametrize("back", [0, 1, 7, 49, 50])
def test_a_watch_from_a_revision_gets_every_later_event_of_its_kinds_in_order(back):
    """The log is read from its end back to the revision: the events after it, oldest first,
    of the kinds asked for; none from the newest revision, all from an older one than the log."""
    store = Store(VirtualClock())
    for i in range(25):
        store.create("Namespace", {"metadata": {"name": f"n{i}"}})
        store.create("ConfigMap", {"metadata": {"name": f"c{i}", "namespace": f"n{i}"}})
    rv = store.resource_version - back
    got = [(ev.kind, ev.resource_version) for ev in store.watch(["Namespace"], rv).drain()]
    want = [
        (ev.kind, ev.resource_version) for ev in store._history if ev.kind == "Namespace" and ev.resource_version > rv
    ]
    assert got == want
    assert len(got) == back // 2  # every other event, the newest a ConfigMap


def test_a_failed_commit_leaves_memory_as_before_and_no_watcher_sees_it(tmp_path):
    """SQLite refusing to grow (``max_page_count``: its "database or disk is full") fails the
    commit: the created, updated and deleted objects are as before, no watch event is sent, the
    next write after space is back gets a revision never used, and the cause is in the error."""
    backend = SQLiteBackend(tmp_path / "s.db")
    store = Store(VirtualClock(), backend=backend)
    store.commit_soon = lambda: None
    kept = store.create("Namespace", {"metadata": {"name": "kept", "labels": {"v": "1"}}})
    doomed = store.create("Namespace", {"metadata": {"name": "doomed"}})
    store.commit()
    watch = store.watch(["Namespace"])
    before_rv = store.resource_version
    pages = backend._db.execute("PRAGMA page_count").fetchone()[0]
    backend._db.execute(f"PRAGMA max_page_count = {pages}")
    store.create("Namespace", {"metadata": {"name": "phantom", "annotations": {"x": "y" * 20_000}}})
    store.update("Namespace", {**kept, "metadata": {**kept["metadata"], "labels": {"v": "2"}}})
    store.delete("Namespace", "", "doomed")
    with pytest.raises(StorageError, match="database or disk is full") as failed:
        store.commit()
    assert failed.value.code == 500 and failed.value.status()["reason"] == "InternalError"
    assert store.try_get("Namespace", "", "phantom") is None
    assert store.get("Namespace", "", "kept") == kept and store.get("Namespace", "", "doomed") == doomed
    assert not watch and not store.pending()
    backend._db.execute("PRAGMA max_page_count = 1073741823")
    again = store.create("Namespace", {"metadata": {"name": "after"}})
    store.commit()
    assert int(again["metadata"]["resourceVersion"]) > before_rv + 3  # the failed revisions stay unused
    assert [ev.obj["metadata"]["name"] for ev in watch.drain()] == ["after"]
    names = {o["metadata"]["name"] for _, o in SQLiteBackend(tmp_path / "s.db").load().objects}
    assert names == {"kept", "doomed", "after"}
    store.close()


def test_pods_by_node_follows_binds_and_deletes():
    """The nodeName index the node lifecycle controller and the hollow kubelet share: a bound pod
    is found under its node, an unbound one nowhere, a deleted one no more."""
    from kubesched.api.podindex import PodsByNode

    idx = PodsByNode()
    bound = {"metadata": {"namespace": "ns", "name": "a"}, "spec": {"nodeName": "n1"}}
    assert idx.track({"metadata": {"name": "pending"}, "spec": {}}, deleted=False) is None
    assert idx.track(bound, deleted=False) == "n1"
    idx.track({"metadata": {"name": "b"}, "spec": {"nodeName": "n1"}}, deleted=False)
    assert idx.keys("n1") == [("ns", "a"), ("default", "b")]
    assert idx.track(bound, deleted=True) == "n1"
    assert idx.keys("n1") == [("default", "b")]
    assert idx.keys("n2") == []


def test_encoded_watch_lines_are_kept_for_the_last_events_only():
    """The watch lines an event's watchers share are dropped once it is WIRE_EVENTS events old:
    the store's log keeps events far longer, and with their lines the server would grow by every
    line it ever sent."""
    from collections import deque

    from kubesched.api.watch import ADDED, WatchEvent
    from kubesched.apiserver.handlers.listwatch import WIRE_EVENTS, ListWatch

    lw = ListWatch.__new__(ListWatch)
    lw._encoded = deque()
    events = [WatchEvent(ADDED, "Pod", {"metadata": {"name": f"p{i}"}}, None, i) for i in range(WIRE_EVENTS + 5)]
    for ev in events:
        ev.wire = lw._keep_lines(ev)
        ev.wire[(ADDED, False)] = b"line\n"
    assert [ev.wire for ev in events[:5]] == [None] * 5
    assert all(ev.wire == {(ADDED, False): b"line\n"} for ev in events[5:])
    assert len(lw._encoded) == WIRE_EVENTS
