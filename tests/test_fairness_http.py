"""API Priority and Fairness over real HTTP (``kubesched apiserver``, two tenants and the
scheduler's user by static token): while the seated requests are held (``--fault-injection``'s
pause, inside the seat), tenant A sends 60 at once; global-default's four seats and A's queue of 50
take 54 of them, the other 6 are refused at once with 429 and Retry-After; tenant B's one request,
sent after A's flood, is served within a round of the seats once they free, before most of A's
queue; the scheduler's request, in a level of its own (workload-high), is seated at once and
answered with A's first four."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from tests.live import Server

PAUSE = 3.0  # seconds the first seated requests are held: the flood arrives meanwhile
LATENCY = 0.05  # then each request's time in its seat
FLOOD = 60


def test_a_tenants_flood_waits_for_itself_and_the_overflow_is_refused(tmp_path) -> None:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text("a-token,tenant-a,2001\nb-token,tenant-b,2002\ns-token,system:kube-scheduler,2003\n")
    s = Server(tmp_path / "data", args=["--token-auth-file", str(tokens), "--fault-injection"]).start()
    try:
        faults = {"latencySeconds": LATENCY, "pauseSeconds": PAUSE}
        assert s.request("PUT", "/debug/kubesched/faults", faults)[0] == 200
        answers: list[tuple[int, float, str | None]] = []
        lock = threading.Lock()
        started = time.monotonic()

        def get(token: str) -> tuple[int, float, str | None]:
            code, _ = s.request("GET", "/api", token=token, raw=True)
            out = (code, time.monotonic() - started, s.last_headers.get("Retry-After"))
            with lock:
                answers.append(out)
            return out

        with ThreadPoolExecutor(FLOOD + 1) as pool:
            flood = [pool.submit(get, "a-token") for _ in range(FLOOD)]
            time.sleep(1.0)  # A's requests are seated and queued
            scheduler = pool.submit(get, "s-token")
            b = pool.submit(get, "b-token").result()
            a = [f.result() for f in flood]
            s_answer = scheduler.result()
        refused = [x for x in a if x[0] == 429]
        served = sorted(x[1] for x in a if x[0] == 200)
        assert len(refused) == FLOOD - 4 - 50 and all(r[2] == "1" for r in refused)  # seats 4, queue 50
        assert all(r[1] < PAUSE for r in refused)  # at once, not after a wait
        assert len(served) == 54 and b[0] == 200
        # B waited for a seat to come free, not for A's queue: one round of the seats at most
        assert sum(1 for t in served if t < b[1]) <= 4 + 4
        # the scheduler waited for nobody's seat: answered with the four seated before the pause ended
        assert s_answer[0] == 200 and sum(1 for t in served if t < s_answer[1]) <= 4
        levels = {}
        for token in ("a-token", "b-token", "s-token"):
            s.request("GET", "/api", token=token, raw=True)
            levels[token] = s.last_headers["X-Kubernetes-PF-PriorityLevel-UID"]
        assert levels["a-token"] == levels["b-token"] != levels["s-token"]
        # APF's metrics, upstream's names: the refusals by reason, what each level dispatched and seats
        code, body = s.request("GET", "/metrics", raw=True)
        metrics = body.decode()
        assert code == 200
        assert (
            'apiserver_flowcontrol_rejected_requests_total{flow_schema="global-default",'
            'priority_level="global-default",reason="queue-full"} 6.0'
        ) in metrics
        assert (
            'apiserver_flowcontrol_dispatched_requests_total{flow_schema="kube-scheduler",'
            'priority_level="workload-high"} 2.0'
        ) in metrics
        assert 'apiserver_flowcontrol_nominal_limit_seats{priority_level="global-default"} 4.0' in metrics
        assert "# HELP apiserver_flowcontrol_rejected_requests_total [BETA] Number of requests rejected" in metrics
    finally:
        s.stop()


def test_watches_are_classified_and_give_their_seat_back_once_initialized(tmp_path) -> None:
    """A watch takes a seat of its level until its initial events are out (upstream's
    WatchInitialized), then streams without one: eight open watches of one tenant, twice
    global-default's seats, leave both tenants' next requests answered at once; each watch's
    response names its FlowSchema and level as other answers do."""
    import http.client
    from urllib.parse import urlsplit

    tokens = tmp_path / "tokens.csv"
    tokens.write_text("a-token,tenant-a,2001\nb-token,tenant-b,2002\n")
    s = Server(tmp_path / "data", args=["--token-auth-file", str(tokens)]).start()
    watches: list[http.client.HTTPSConnection] = []
    try:
        binding = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "tenant-a-view"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "tenant-a"}],
        }
        assert s.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", binding)[0] == 201
        s.request("GET", "/api", token="a-token", raw=True)
        level = s.last_headers["X-Kubernetes-PF-PriorityLevel-UID"]
        server, _, ctx = s._config()
        url = urlsplit(server)
        for _ in range(8):
            conn = http.client.HTTPSConnection(url.hostname or "127.0.0.1", url.port, context=ctx, timeout=10)
            conn.request(
                "GET",
                "/api/v1/namespaces/default/pods?watch=1&timeoutSeconds=60",
                headers={"Authorization": "Bearer a-token"},
            )
            resp = conn.getresponse()  # the stream's head: the watch is open
            assert resp.status == 200
            assert resp.getheader("X-Kubernetes-PF-PriorityLevel-UID") == level
            assert resp.getheader("X-Kubernetes-PF-FlowSchema-UID")
            watches.append(conn)
        for token in ("a-token", "b-token"):
            started = time.monotonic()
            code, _ = s.request("GET", "/api", token=token, raw=True)
            assert code == 200 and time.monotonic() - started < 2.0
    finally:
        for conn in watches:
            conn.close()
        s.stop()
