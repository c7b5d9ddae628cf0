"""Durability of the embedded API server: every write acknowledged before ``kill -9`` is there
after a restart on the same data directory, and resourceVersions keep increasing."""

from __future__ import annotations

import signal

from tests.live import Server


def test_acknowledged_writes_survive_kill_9(tmp_path):
    s = Server(tmp_path / "data").start()
    acked = []
    for i in range(200):
        code, body = s.request(
            "POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": f"d{i}"}, "data": {"i": str(i)}}
        )
        assert code == 201
        acked.append((body["metadata"]["name"], body["metadata"]["uid"]))
    code, updated = s.request(
        "PATCH",
        "/api/v1/namespaces/default/configmaps/d7",
        {"data": {"i": "seven"}},
        content_type="application/merge-patch+json",
    )
    assert code == 200
    assert s.request("DELETE", "/api/v1/namespaces/default/configmaps/d8")[0] == 200
    last_rv = int(updated["metadata"]["resourceVersion"])
    s.stop(signal.SIGKILL)
    s.start()
    try:
        _, listed = s.request("GET", "/api/v1/namespaces/default/configmaps")
        got = {i["metadata"]["name"]: i for i in listed["items"]}
        assert {(n, u) for n, u in acked if n != "d8"} == {
            (n, got[n]["metadata"]["uid"]) for n, _ in acked if n != "d8"
        }
        assert "d8" not in got and got["d7"]["data"] == {"i": "seven"}
        code, created = s.request("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "after"}})
        assert code == 201 and int(created["metadata"]["resourceVersion"]) > last_rv
        # the revision log survived too: a watch from before the kill replays the patch and the delete
        code, raw = s.request(
            "GET",
            f"/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={last_rv - 1}&timeoutSeconds=1",
            raw=True,
        )
        assert b'"MODIFIED"' in raw and b'"DELETED"' in raw
    finally:
        s.stop()
