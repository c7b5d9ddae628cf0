"""HTTP extenders against real HTTP servers on loopback: filter (both argument forms, failed and
unresolvable nodes in the FitError), prioritize (weight × 10 into the score), bind (instead of
DefaultBinder), managed resources, ignorable and non-ignorable failures (5xx, timeout, bad JSON),
and upstream's configuration validation."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from helpers import make_node, make_pod
from kubesched.errors import InputError
from kubesched.scheduler.extender import parse_extenders
from kubesched.testing import Cluster

Handler = Callable[[str, Any], tuple[int, Any]]


class Extender:
    """A loopback extender: ``respond(verb, args) -> (status, body)``; requests are recorded."""

    def __init__(self, respond: Handler) -> None:
        self.requests: list[tuple[str, Any]] = []
        outer = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                verb = self.path.strip("/").split("/")[-1]
                args = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append((verb, args))
                code, body = respond(verb, args)
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except BrokenPipeError:  # the scheduler gave up waiting (the timeout case)
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/scheduler"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def verbs(self) -> list[str]:
        return [v for v, _ in self.requests]

    def close(self) -> None:
        self.server.shutdown()


@pytest.fixture
def extender() -> Iterator[Callable[[Handler], Extender]]:
    made: list[Extender] = []

    def make(respond: Handler) -> Extender:
        made.append(Extender(respond))
        return made[-1]

    yield make
    for e in made:
        e.close()


def _cluster(*extenders: dict[str, Any], nodes: int = 3) -> Cluster:
    return Cluster(*(make_node(f"n{i}") for i in range(nodes)), config={"extenders": list(extenders)})


def test_filter_with_node_names_narrows_the_nodes(extender):
    def respond(verb: str, args: Any) -> tuple[int, Any]:
        return 200, {
            "NodeNames": [n for n in args["NodeNames"] if n == "n2"],
            "FailedNodes": {"n0": "extender says no"},
            "FailedAndUnresolvableNodes": {"n1": "never"},
            "Error": "",
        }

    ext = extender(respond)
    c = _cluster({"urlPrefix": ext.url, "filterVerb": "filter", "nodeCacheCapable": True})
    c.create(make_pod("p", cpu="100m"))
    c.settle()
    assert c.node_of("p") == "n2"
    verb, args = ext.requests[0]
    assert verb == "filter" and sorted(args["NodeNames"]) == ["n0", "n1", "n2"] and args["Nodes"] is None
    assert args["Pod"]["metadata"]["name"] == "p"


def test_filter_failures_enter_the_fit_error_and_unresolvable_nodes_are_not_preempted(extender):
    def respond(verb: str, args: Any) -> tuple[int, Any]:
        names = [n["metadata"]["name"] for n in args["Nodes"]["items"]]
        assert args["NodeNames"] is None
        return 200, {
            "Nodes": {"items": []},
            "FailedNodes": {n: "extender says no" for n in names if n != "n2"},
            "FailedAndUnresolvableNodes": {"n2": "never"},
        }

    ext = extender(respond)
    c = _cluster({"urlPrefix": ext.url, "filterVerb": "filter"})
    c.create(make_pod("p", cpu="100m"))
    c.settle()
    assert c.node_of("p") is None
    assert c.sched.last_message["default/p"] == (
        "0/3 nodes are available: 1 never, 2 extender says no. "
        "preemption: 0/3 nodes are available: "
        "1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod."
    )


def test_prioritize_adds_weight_times_ten_times_the_score(extender):
    def respond(verb: str, args: Any) -> tuple[int, Any]:
        return 200, [{"Host": n, "Score": 10 if n == "n1" else 0} for n in args["NodeNames"]]

    ext = extender(respond)
    c = _cluster({"urlPrefix": ext.url, "prioritizeVerb": "prioritize", "weight": 5, "nodeCacheCapable": True})
    for i in range(3):
        c.create(make_pod(f"p{i}", cpu="100m"))
    c.settle()
    # 10 × 5 × 10 = 500 outweighs the spreading the resource scores would do
    assert [c.node_of(f"p{i}") for i in range(3)] == ["n1", "n1", "n1"]
    assert ext.verbs() == ["prioritize"] * 3


def test_a_binder_extender_binds_instead_of_default_binder(extender):
    def respond(verb: str, args: Any) -> tuple[int, Any]:
        if args["PodName"] == "refused":
            return 200, {"Error": "no capacity left"}
        return 200, {"Error": ""}

    ext = extender(respond)
    c = _cluster({"urlPrefix": ext.url, "bindVerb": "bind"}, nodes=1)
    c.create(make_pod("p", cpu="100m"), make_pod("refused", cpu="100m"))
    c.settle()
    bind_args = [a for v, a in ext.requests if v == "bind"]
    assert bind_args[0] == {
        "PodName": "p",
        "PodNamespace": "default",
        "PodUID": "uid-default-p",
        "Node": "n0",
    }
    assert c.node_of("p") is None  # DefaultBinder did not run: the extender owns the binding
    assert "Successfully assigned default/p to n0" in c.events("Scheduled")
    assert c.sched.last_message["default/refused"] == "no capacity left"


def test_managed_resources_limit_which_pods_the_extender_sees(extender):
    ext = extender(lambda verb, args: (200, {"NodeNames": [], "FailedNodes": {}}))
    cfg = {
        "urlPrefix": ext.url,
        "filterVerb": "filter",
        "nodeCacheCapable": True,
        "managedResources": [{"name": "example.com/foo", "ignoredByScheduler": True}],
    }
    c = _cluster(cfg)
    c.create(make_pod("plain", cpu="100m"))
    c.settle()
    assert c.node_of("plain") is not None and ext.requests == []


@pytest.mark.parametrize(
    ("respond", "timeout", "message"),
    [
        (lambda v, a: (500, {"oops": 1}), "5s", "failed filter with extender at URL {url}/filter, code 500"),
        (lambda v, a: (200, b"{not json"), "5s", "filter with extender at URL {url}/filter: invalid JSON response"),
        (lambda v, a: (200, {"Error": "filter crashed"}), "5s", "filter crashed"),
        (lambda v, a: (time.sleep(1), (200, {}))[1], "200ms", "filter with extender at URL {url}/filter: timed out"),
    ],
)
def test_a_failing_extender_fails_the_attempt_unless_ignorable(extender, respond, timeout, message):
    ext = extender(respond)
    base = {"urlPrefix": ext.url, "filterVerb": "filter", "nodeCacheCapable": True, "httpTimeout": timeout}
    c = _cluster(base)
    c.create(make_pod("p", cpu="100m"))
    c.settle()
    assert c.node_of("p") is None
    assert c.sched.last_message["default/p"].startswith(message.format(url=ext.url))
    assert c.sched.stats.errors == 1
    ignorable = _cluster({**base, "ignorable": True})
    ignorable.create(make_pod("q", cpu="100m"))
    ignorable.settle()
    assert ignorable.node_of("q") is not None


@pytest.mark.parametrize(
    ("extenders", "field", "message"),
    [
        ([{"urlPrefix": "http://x", "prioritizeVerb": "p"}], "extenders[0].weight", "must have a positive weight"),
        (
            [{"urlPrefix": "http://a", "bindVerb": "b"}, {"urlPrefix": "http://b", "bindVerb": "b"}],
            "extenders",
            "found 2 extenders implementing bind",
        ),
        (
            [{"urlPrefix": "http://a", "managedResources": [{"name": "x.io/a"}, {"name": "x.io/a"}]}],
            "extenders[0].managedResources[1].name",
            "duplicate extender managed resource name",
        ),
        ([{"filterVerb": "f"}], "extenders[0].urlPrefix", "Required value"),
        ([{"urlPrefix": "http://a", "filterVerbs": "f"}], "extenders[0].filterVerbs", 'unknown field "filterVerbs"'),
        ([{"urlPrefix": "http://a", "httpTimeout": "soon"}], "extenders[0].httpTimeout", "invalid duration"),
    ],
)
def test_extender_configuration_is_validated_as_upstream(extenders, field, message):
    with pytest.raises(InputError) as err:
        parse_extenders(extenders)
    assert err.value.field == field and message in err.value.message


def test_resources_ignored_by_scheduler_are_left_to_the_extender(extender):
    """A managed resource with ignoredByScheduler is not checked by NodeResourcesFit: the pod
    reaches the extender, which decides."""
    ext = extender(lambda verb, args: (200, {"NodeNames": args["NodeNames"][:1], "FailedNodes": {}}))
    managed = [{"name": "example.com/foo", "ignoredByScheduler": True}]
    pod = make_pod("wants-foo", cpu="100m")
    pod["spec"]["containers"][0]["resources"]["requests"]["example.com/foo"] = "1"
    pod["spec"]["containers"][0]["resources"]["limits"] = {"example.com/foo": "1"}  # not overcommittable
    c = _cluster({"urlPrefix": ext.url, "filterVerb": "filter", "nodeCacheCapable": True, "managedResources": managed})
    c.create(pod)
    c.settle()
    assert c.node_of("wants-foo") is not None and ext.verbs() == ["filter"]
    plain = _cluster()
    plain.create(pod)
    plain.settle()
    assert "Insufficient example.com/foo" in plain.sched.last_message["default/wants-foo"]


def _filled(*extenders: dict[str, Any]) -> Cluster:
    """Two 1-CPU nodes, each full with one low-priority pod."""
    high = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 100}
    c = Cluster(make_node("n0", cpu="1"), make_node("n1", cpu="1"), high, config={"extenders": list(extenders)})
    c.create(make_pod("low-0", cpu="1", node="n0"), make_pod("low-1", cpu="1", node="n1"))
    c.settle()
    return c


@pytest.mark.parametrize(("node_cache_capable", "target"), [(True, "n1"), (False, "n1"), (True, "n0")])
def test_a_preempting_extender_chooses_among_the_candidates(extender, node_cache_capable, target):
    def respond(verb: str, args: Any) -> tuple[int, Any]:
        if node_cache_capable:
            victims = args["NodeNameToMetaVictims"]
            assert args["NodeNameToVictims"] is None
            uid = victims[target]["Pods"][0]["UID"]
        else:
            victims = args["NodeNameToVictims"]
            uid = victims[target]["Pods"][0]["metadata"]["uid"]
        assert sorted(victims) == ["n0", "n1"]
        return 200, {"NodeNameToMetaVictims": {target: {"Pods": [{"UID": uid}], "NumPDBViolations": 0}}}

    ext = extender(respond)
    c = _filled({"urlPrefix": ext.url, "preemptVerb": "preempt", "nodeCacheCapable": node_cache_capable})
    c.create(make_pod("high", cpu="1", priority_class="high"))
    c.settle()
    assert ext.verbs() == ["preempt"]
    high = c.store.get("Pod", "default", "high")
    assert high["status"]["nominatedNodeName"] == target
    other = "n0" if target == "n1" else "n1"
    assert c.store.get("Pod", "default", f"low-{other[1]}")["metadata"].get("deletionTimestamp") is None
    victim = c.store.try_get("Pod", "default", f"low-{target[1]}")
    assert victim is None or victim["metadata"].get("deletionTimestamp")


def test_a_preempting_extender_naming_an_unknown_victim_fails_the_preemption(extender):
    ext = extender(
        lambda verb, args: (200, {"NodeNameToMetaVictims": {"n0": {"Pods": [{"UID": "nope"}], "NumPDBViolations": 0}}})
    )
    c = _filled({"urlPrefix": ext.url, "preemptVerb": "preempt", "nodeCacheCapable": True})
    c.create(make_pod("high", cpu="1", priority_class="high"))
    c.settle()
    assert c.store.try_get("Pod", "default", "low-0")["metadata"].get("deletionTimestamp") is None
    assert (
        "claims to preempt pod (UID: nope) on node: n0, but the pod is not found on that node"
        in (c.sched.last_message["default/high"])
    )


def test_https_extender_with_tls_config(tmp_path):
    """enableHTTPS with tlsConfig: the extender's CA trusted by file or by data, or insecure; an
    untrusted certificate fails the call."""
    import base64
    import ssl

    from kubesched.app.certs import ensure_certs, server_context

    ca, crt, key = ensure_certs(tmp_path, "127.0.0.1")
    ext = Extender(lambda verb, args: (200, {"NodeNames": ["n1"], "FailedNodes": {}}))
    ctx: ssl.SSLContext = server_context(crt, key)
    ext.server.socket = ctx.wrap_socket(ext.server.socket, server_side=True)
    url = ext.url.replace("http://", "https://")
    try:
        for tls in ({"caFile": str(ca)}, {"caData": base64.b64encode(ca.read_bytes()).decode()}, {"insecure": True}):
            c = _cluster(
                {
                    "urlPrefix": url,
                    "filterVerb": "filter",
                    "nodeCacheCapable": True,
                    "enableHTTPS": True,
                    "tlsConfig": tls,
                }
            )
            c.create(make_pod("p", cpu="100m"))
            c.settle()
            assert c.node_of("p") == "n1", tls
        c = _cluster({"urlPrefix": url, "filterVerb": "filter", "nodeCacheCapable": True, "enableHTTPS": True})
        c.create(make_pod("p", cpu="100m"))
        c.settle()
        assert c.node_of("p") is None and "CERTIFICATE_VERIFY_FAILED" in c.sched.last_message["default/p"]
    finally:
        ext.close()
