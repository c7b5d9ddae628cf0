"""Authentication and RBAC in the embedded API server: rule matching (resourceNames, subresources,
non-resource URLs, wildcards), ClusterRole aggregation, service account tokens (TokenRequest,
expiry, a deleted account), static token users, and the 401/403 Status bodies over HTTP with
kubectl and the official Python client."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from tests.live import Server, kubectl_binaries, temp_home

from kubesched.api.watch import WatchEvent
from kubesched.apiserver.auth import authn
from kubesched.apiserver.auth.bootstrap_policy import rule, urls
from kubesched.apiserver.auth.rbac import Attributes, UserInfo, forbidden_message, rule_allows
from kubesched.client.object_client import StoreObjects
from kubesched.clock import VirtualClock
from kubesched.cluster.store import Store
from kubesched.controllers.clusterroleaggregation import ClusterRoleAggregationController

BOB = UserInfo("bob", groups=("system:authenticated",))
BINARIES = kubectl_binaries()
NEWEST = max(BINARIES, key=lambda v: int(v.split(".")[1]) if "." in v else 0) if BINARIES else None


def res(verb: str, resource: str, *, group: str = "", sub: str = "", ns: str = "default", name: str = "") -> Attributes:
    return Attributes(BOB, verb, True, api_group=group, resource=resource, subresource=sub, namespace=ns, name=name)


@pytest.mark.parametrize(
    ("r", "attrs", "allowed"),
    [
        (rule(("get",), ("",), ("pods",)), res("get", "pods"), True),
        (rule(("get",), ("",), ("pods",)), res("list", "pods"), False),
        (rule(("get",), ("",), ("pods",)), res("get", "pods", sub="log"), False),  # a subresource is its own
        (rule(("get",), ("",), ("pods/log",)), res("get", "pods", sub="log"), True),
        (rule(("patch",), ("",), ("*/status",)), res("patch", "nodes", sub="status", ns=""), True),
        # ``pods/*`` is no wildcard upstream (ResourceMatches): it matched every subresource here
        (rule(("patch",), ("",), ("pods/*",)), res("patch", "pods", sub="status"), False),
        (rule(("patch",), ("",), ("pods/*",)), res("patch", "pods"), False),
        (rule(("*",), ("*",), ("*",)), res("delete", "leases", group="coordination.k8s.io"), True),
        (rule(("get",), ("apps",), ("deployments",)), res("get", "deployments", group=""), False),
        (
            rule(("get", "update"), ("coordination.k8s.io",), ("leases",), ("mine",)),
            res("update", "leases", group="coordination.k8s.io", name="mine"),
            True,
        ),
        (
            rule(("get", "update"), ("coordination.k8s.io",), ("leases",), ("mine",)),
            res("update", "leases", group="coordination.k8s.io", name="theirs"),
            False,
        ),
        (
            rule(("get", "update"), ("coordination.k8s.io",), ("leases",), ("mine",)),
            res("create", "leases", group="coordination.k8s.io"),
            False,
        ),
        (urls(("get",), ("/metrics",)), Attributes(BOB, "get", False, path="/metrics"), True),
        (urls(("get",), ("/healthz/*",)), Attributes(BOB, "get", False, path="/healthz/etcd"), True),
        (urls(("get",), ("/healthz/*",)), Attributes(BOB, "get", False, path="/livez"), False),
        (urls(("get",), ("/metrics",)), res("get", "metrics"), False),  # a URL rule grants no resource
    ],
)
def test_rule_matching(r, attrs, allowed):
    assert rule_allows(r, attrs) is allowed


def test_forbidden_messages():
    assert forbidden_message(res("list", "pods"), "pods") == (
        'pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the namespace "default"'
    )
    lease = res("update", "leases", group="coordination.k8s.io", ns="kube-system", name="x")
    assert forbidden_message(lease, "leases.coordination.k8s.io") == (
        'leases.coordination.k8s.io "x" is forbidden: User "bob" cannot update resource "leases" in API group '
        '"coordination.k8s.io" in the namespace "kube-system"'
    )
    assert forbidden_message(res("create", "pods", sub="binding", ns=""), "pods") == (
        'pods is forbidden: User "bob" cannot create resource "pods/binding" in API group "" at the cluster scope'
    )
    assert forbidden_message(Attributes(BOB, "get", False, path="/metrics"), "") == (
        'forbidden: User "bob" cannot get path "/metrics"'
    )


def test_aggregation_gathers_labelled_roles():
    store = Store(VirtualClock())
    from kubesched.apiserver.auth import bootstrap_policy

    bootstrap_policy.install(store)
    agg = ClusterRoleAggregationController(StoreObjects(store))
    agg.run()
    view = store.get("ClusterRole", "", "view")["rules"]
    admin = store.get("ClusterRole", "", "admin")["rules"]
    assert rule(("get", "list", "watch"), ("batch",), ("cronjobs", "cronjobs/status", "jobs", "jobs/status")) in view
    assert all(r in admin for r in view)  # view -> edit -> admin
    widgets = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "widgets-view", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
        "rules": [rule(("get",), ("example.com",), ("widgets",))],
    }
    store.create("ClusterRole", widgets)
    agg.on_event(WatchEvent("ADDED", "ClusterRole", widgets, None, 0))
    agg.run()  # view gathers it, then edit from view, then admin from edit
    for name in ("view", "edit", "admin"):
        assert rule(("get",), ("example.com",), ("widgets",)) in store.get("ClusterRole", "", name)["rules"], name


def test_service_account_tokens_expire_and_die_with_their_account(monkeypatch):
    store = Store(VirtualClock())
    sa = store.create(
        "ServiceAccount", {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "s", "namespace": "ns"}}
    )
    a = authn.Authenticator("admin", b"k" * 32, store)
    now = 1_700_000_000.0
    token, exp = a.issue("ns", "s", sa["metadata"]["uid"], 600, [], now)
    assert exp == now + 600
    monkeypatch.setattr(authn.time, "time", lambda: now + 599)
    user = a.authenticate(f"Bearer {token}")
    assert user is not None and user.name == "system:serviceaccount:ns:s"
    assert user.groups == ("system:serviceaccounts", "system:serviceaccounts:ns", "system:authenticated")
    monkeypatch.setattr(authn.time, "time", lambda: now + 660)  # go-jose's minute of leeway
    assert a.authenticate(f"Bearer {token}") is not None
    monkeypatch.setattr(authn.time, "time", lambda: now + 661)
    assert a.authenticate(f"Bearer {token}") is None  # expired
    monkeypatch.setattr(authn.time, "time", lambda: now + 1)
    forged = token[:-2] + ("AA" if not token.endswith("AA") else "BB")
    assert a.authenticate(f"Bearer {forged}") is None
    assert authn.Authenticator("admin", b"other-key" * 4, store).authenticate(f"Bearer {token}") is None
    store.delete("ServiceAccount", "ns", "s")
    assert a.authenticate(f"Bearer {token}") is None


def _signed(a: authn.Authenticator, claims: dict, header: dict | None = None) -> str:
    """A token with these claims, signed with the authenticator's key (as only the server can)."""
    import hashlib
    import hmac

    head = authn._b64(json.dumps(header or {"alg": "HS256", "kid": "kubesched"}).encode())
    body = authn._b64(json.dumps(claims).encode())
    sig = authn._b64(hmac.new(a.key, f"{head}.{body}".encode(), hashlib.sha256).digest())
    return f"{head}.{body}.{sig}"


NOW = 1_700_000_000


@pytest.mark.parametrize(
    ("change", "accepted"),
    [
        ({}, True),
        ({"aud": "https://kubernetes.default.svc.cluster.local"}, True),  # one audience as a string
        ({"aud": ["vault"]}, False),  # minted for another audience
        ({"aud": "vault"}, False),
        ({"aud": [1]}, False),  # not a string: jwt.Audience does not decode it
        ({"aud": {"x": "https://kubernetes.default.svc.cluster.local"}}, False),
        ({"aud": None}, False),
        ({"iss": "https://evil.example"}, False),
        ({"nbf": NOW + 120}, False),  # not valid yet (beyond the minute of leeway)
        ({"nbf": NOW + 30}, True),
        ({"iat": NOW + 120}, False),  # issued in the future
        ({"exp": NOW - 61}, False),
        ({"exp": "9999999999"}, False),  # times are numbers
        ({"exp": None}, False),
        ({"kubernetes.io": {"namespace": "ns", "serviceaccount": {"name": "s", "uid": 7}}}, False),
    ],
)
def test_service_account_token_claims_are_checked_as_kube_apiservers(change, accepted):
    store = Store(VirtualClock())
    sa = store.create(
        "ServiceAccount", {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "s", "namespace": "ns"}}
    )
    a = authn.Authenticator("admin", b"k" * 32, store)
    claims = {
        "aud": ["https://kubernetes.default.svc.cluster.local"],
        "exp": NOW + 3600,
        "iat": NOW,
        "nbf": NOW,
        "iss": "https://kubernetes.default.svc.cluster.local",
        "sub": "system:serviceaccount:ns:s",
        "kubernetes.io": {"namespace": "ns", "serviceaccount": {"name": "s", "uid": sa["metadata"]["uid"]}},
    }
    claims.update(change)
    claims = {k: v for k, v in claims.items() if v is not None}
    user = a._service_account(_signed(a, claims).encode(), a.audiences, now=NOW)[0]
    assert (user is not None) is accepted


def test_a_token_with_padding_another_algorithm_or_junk_is_refused():
    store = Store(VirtualClock())
    sa = store.create(
        "ServiceAccount", {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "s", "namespace": "ns"}}
    )
    a = authn.Authenticator("admin", b"k" * 32, store)
    token, _ = a.issue("ns", "s", sa["metadata"]["uid"], 3600, [], NOW)
    assert a._service_account(token.encode(), a.audiences, now=NOW)[0] is not None
    head, body, sig = token.split(".")
    padded = f"{head}.{body}.{sig}" + "=" * (-len(sig) % 4 or 4)
    assert a._service_account(padded.encode(), a.audiences, now=NOW)[0] is None  # RawURLEncoding has no padding
    assert a._service_account(f"{head}.{body}.{sig}.".encode(), a.audiences, now=NOW)[0] is None
    assert a._service_account(f"{head} .{body}.{sig}".encode(), a.audiences, now=NOW)[0] is None
    none_alg = _signed(a, json.loads(authn._unb64(body)), {"alg": "none"})
    assert a._service_account(none_alg.encode(), a.audiences, now=NOW)[0] is None
    only_api = authn.Authenticator("admin", b"k" * 32, store, audiences=("vault",))
    assert only_api._service_account(token.encode(), only_api.audiences, now=NOW)[0] is None  # --api-audiences decides


def test_token_file_parsing(tmp_path):
    f = tmp_path / "tokens.csv"
    f.write_text('# users\nt1,alice,1001,"devs,qa"\nt2,bob,1002\n')
    users = authn.load_token_file(str(f))
    assert users["t1"] == UserInfo("alice", uid="1001", groups=("devs", "qa", "system:authenticated"))
    assert users["t2"].groups == ("system:authenticated",)
    f.write_text("t3\n")
    with pytest.raises(Exception, match="line 1: expected token,user,uid"):
        authn.load_token_file(str(f))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    d = tmp_path_factory.mktemp("rbac")
    tokens = d / "tokens.csv"
    tokens.write_text('alice-token,alice,1001,"devs"\nbob-token,bob,1002\n')
    s = Server(d / "data", command="apiserver", nodes=1, args=["--token-auth-file", str(tokens)]).start()
    yield s
    s.stop()


def test_http_401_and_403_bodies(server):
    code, body = server.request("GET", "/api/v1/namespaces/default/pods", token="wrong")
    assert code == 401 and body["reason"] == "Unauthorized"
    code, body = server.request("GET", "/api/v1/namespaces/default/pods", token="alice-token")
    assert (code, body["reason"]) == (403, "Forbidden")
    assert body["message"] == (
        'pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"'
    )
    assert body["details"] == {"kind": "pods"}
    code, body = server.request("GET", "/api/v1/nodes/node-0", token="alice-token")
    assert (
        body["message"]
        == 'nodes "node-0" is forbidden: User "alice" cannot get resource "nodes" in API group "" at the cluster scope'
    )
    assert body["details"] == {"kind": "nodes", "name": "node-0"}
    code, _ = server.request("GET", "/version", token="alice-token")
    assert code == 200
    code, _ = server.request("GET", "/apis", token="alice-token")  # system:discovery
    assert code == 200
    # granted through a RoleBinding of the group, in one namespace only
    server.request(
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "devs-view", "namespace": "default"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "devs"}],
        },
    )
    code, _ = server.request("GET", "/api/v1/namespaces/default/pods", token="alice-token")
    assert code == 200
    code, _ = server.request("GET", "/api/v1/namespaces/kube-system/pods", token="alice-token")
    assert code == 403
    code, body = server.request("DELETE", "/api/v1/namespaces/default/pods/x", token="alice-token")
    assert code == 403 and 'cannot delete resource "pods"' in body["message"]


@pytest.mark.skipif(NEWEST is None, reason="no kubectl binary on this machine (google-cloud-sdk's kubectl.1.XX)")
def test_kubectl_create_token_can_i_and_the_python_client(server):
    home = temp_home()
    env = {**os.environ, "HOME": home, "KUBECONFIG": str(server.kubeconfig)}
    assert NEWEST is not None
    k = BINARIES[NEWEST]

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([k, *args], capture_output=True, text=True, env=env, timeout=60)

    assert run("create", "serviceaccount", "sched", "-n", "kube-system").returncode == 0
    short = run("create", "token", "sched", "-n", "kube-system", "--duration=5m")
    assert short.returncode == 1 and "may not specify a duration less than 10 minutes" in short.stderr
    token = run("create", "token", "sched", "-n", "kube-system").stdout.strip()
    assert run("--token", token, "auth", "can-i", "list", "nodes").stdout.strip() == "no"
    denied = run("--token", token, "get", "nodes")
    assert denied.returncode == 1 and (
        'nodes is forbidden: User "system:serviceaccount:kube-system:sched" cannot list resource "nodes" in API '
        'group "" at the cluster scope' in denied.stderr
    )
    assert (
        run(
            "create",
            "clusterrolebinding",
            "sched",
            "--clusterrole=system:kube-scheduler",
            "--serviceaccount=kube-system:sched",
        ).returncode
        == 0
    )
    assert run("--token", token, "auth", "can-i", "list", "nodes").stdout.strip() == "yes"
    assert (
        run("--token", token, "auth", "can-i", "update", "leases/kube-scheduler", "-n", "kube-system").stdout.strip()
        == "yes"
    )
    assert run("--token", token, "auth", "can-i", "update", "leases/other", "-n", "kube-system").stdout.strip() == "no"
    listing = run("--token", token, "auth", "can-i", "--list").stdout
    assert "pods/binding" in listing and "csinodes.storage.k8s.io" in listing
    whoami = run("--token", token, "auth", "whoami", "-o", "json").stdout
    assert json.loads(whoami)["status"]["userInfo"]["username"] == "system:serviceaccount:kube-system:sched"

    # the official Python client, with only the token
    from kubernetes import client as k8s

    cfg = k8s.Configuration()
    cfg.host = f"https://127.0.0.1:{server.port}"
    cfg.ssl_ca_cert = str(Path(server.data_dir) / "ca.crt")
    cfg.api_key = {"authorization": f"Bearer {token}"}
    api = k8s.CoreV1Api(k8s.ApiClient(cfg))
    assert [n.metadata.name for n in api.list_node().items] == ["node-0"]
    with pytest.raises(k8s.ApiException) as err:
        api.list_namespaced_secret("default")
    assert err.value.status == 403
    assert json.loads(err.value.body)["message"].startswith(
        'secrets is forbidden: User "system:serviceaccount:kube-system:sched"'
    )


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        # a watch is authorized as a watch however the flag is spelled, as it is served as one
        ("GET", "/api/v1/namespaces/default/pods", {"watch": "t"}, ("watch", "pods", "", "default", "")),
        ("GET", "/api/v1/namespaces/default/pods", {"watch": "TRUE"}, ("watch", "pods", "", "default", "")),
        ("GET", "/api/v1/namespaces/default/pods", {"watch": "yes"}, ("watch", "pods", "", "default", "")),
        ("GET", "/api/v1/namespaces/default/pods", {"watch": "False"}, ("list", "pods", "", "default", "")),
        ("GET", "/api/v1/namespaces/default/pods", {"watch": "0"}, ("list", "pods", "", "default", "")),
        # a namespace's status and finalize are subresources of namespaces, not resources
        ("PUT", "/api/v1/namespaces/team/status", {}, ("update", "namespaces", "status", "team", "team")),
        ("PUT", "/api/v1/namespaces/team/finalize", {}, ("update", "namespaces", "finalize", "team", "team")),
        ("GET", "/api/v1/namespaces/team", {}, ("get", "namespaces", "", "team", "team")),
        ("GET", "/api/v1/namespaces/team/pods/p/status", {}, ("get", "pods", "status", "team", "p")),
        # a list or watch of one object by field selector is about that name (resourceNames rules)
        (
            "GET",
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
            {"watch": "1", "fieldSelector": "metadata.name=kube-scheduler"},
            ("watch", "leases", "", "kube-system", "kube-scheduler"),
        ),
        (
            "GET",
            "/api/v1/namespaces/default/pods",
            {"fieldSelector": "metadata.name!=x"},
            ("list", "pods", "", "default", ""),
        ),
    ],
)
def test_request_attributes_match_what_is_served(method, path, query, expected):
    from kubesched.apiserver.auth.requestinfo import request_attributes

    a = request_attributes(BOB, method, path, query)
    assert (a.verb, a.resource, a.subresource, a.namespace, a.name) == expected


def test_a_watch_spelled_t_needs_the_watch_verb_over_http(server):
    """``?watch=t`` was authorized as a list yet served as a watch: a list-only user watched."""
    lister = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "configmap-lister"},
        "rules": [rule(("list",), ("",), ("configmaps",))],
    }
    assert server.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", lister)[0] == 201
    bind = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "alice-lists"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "configmap-lister"},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}],
    }
    assert server.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", bind)[0] == 201
    assert server.request("GET", "/api/v1/configmaps", token="alice-token")[0] == 200
    status, body = server.request("GET", "/api/v1/configmaps?watch=t&timeoutSeconds=1", token="alice-token")
    assert status == 403
    assert body["message"] == (
        'configmaps is forbidden: User "alice" cannot watch resource "configmaps" in API group "" at the cluster scope'
    )


def test_token_requests_over_http_bound_audiences_and_lifetimes(server):
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}}
    assert server.request("POST", "/api/v1/namespaces/default/serviceaccounts", sa)[0] == 201
    path = "/api/v1/namespaces/default/serviceaccounts/robot/token"

    def token_request(spec: dict) -> tuple[int, dict]:
        return server.request(
            "POST", path, {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
        )

    status, body = token_request({"expirationSeconds": 2**32 + 1})
    assert status == 422 and body["message"] == (
        'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 4294967297: '
        "may not specify a duration larger than 2^32 seconds"
    )
    status, body = token_request({"audiences": [1]})
    assert status == 400 and body["message"] == (
        'TokenRequest in version "v1" cannot be handled as a TokenRequest: json: cannot unmarshal number into Go '
        "struct field TokenRequestSpec.spec.audiences of type string"
    )
    status, body = token_request({"audiences": ["vault"]})  # a token for another service
    assert status == 201 and body["spec"]["audiences"] == ["vault"]
    assert server.request("GET", "/api/v1/namespaces/default/pods", token=body["status"]["token"])[0] == 401
    status, body = token_request({})
    assert status == 201
    assert server.request("GET", "/api/v1/namespaces/default/pods", token=body["status"]["token"])[0] == 403


@pytest.fixture(scope="module")
def impersonation(server):
    """bob may impersonate the user alice and the group devs; nothing else."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "impersonate-alice"},
        "rules": [
            rule(("impersonate",), ("",), ("users",), ("alice",)),
            rule(("impersonate",), ("",), ("groups",), ("devs",)),
        ],
    }
    assert server.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", role)[0] == 201
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "bob-impersonates"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "impersonate-alice"},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "bob"}],
    }
    assert server.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", binding)[0] == 201
    return server


def test_impersonation_headers_over_http(impersonation):
    s = impersonation
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    path = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
    status, body = s.request("POST", path, review, token="bob-token", headers={"Impersonate-User": "alice"})
    assert status == 201 and body["status"]["userInfo"] == {"username": "alice", "groups": ["system:authenticated"]}
    status, body = s.request(
        "POST", path, review, token="bob-token", headers={"Impersonate-User": "alice", "Impersonate-Group": "devs"}
    )
    assert status == 201 and body["status"]["userInfo"]["groups"] == ["devs", "system:authenticated"]
    status, body = s.request("POST", path, review, token="bob-token", headers={"Impersonate-User": "carol"})
    assert status == 403 and body["message"] == (
        'users "carol" is forbidden: User "bob" cannot impersonate resource "users" in API group "" '
        "at the cluster scope"
    )
    status, body = s.request(
        "POST", path, review, token="bob-token", headers={"Impersonate-User": "alice", "Impersonate-Group": "admins"}
    )
    assert status == 403 and body["message"].startswith('groups "admins" is forbidden: User "bob" cannot impersonate')
    status, body = s.request("POST", path, review, token="bob-token", headers={"Impersonate-Group": "devs"})
    assert status == 400 and body["message"] == "requested [Group devs] without impersonating a user"
    # the admin (system:masters) may impersonate anyone, a service account with its groups
    status, body = s.request("POST", path, review, headers={"Impersonate-User": "system:serviceaccount:default:robot"})
    assert status == 201 and body["status"]["userInfo"]["groups"] == [
        "system:serviceaccounts",
        "system:serviceaccounts:default",
        "system:authenticated",
    ]
    # and the request is authorized as the impersonated user: alice cannot list secrets
    status, body = s.request("GET", "/api/v1/namespaces/default/secrets", headers={"Impersonate-User": "alice"})
    assert status == 403 and 'User "alice" cannot list resource "secrets"' in body["message"]


@pytest.mark.skipif(NEWEST is None, reason="no kubectl binary on this machine (google-cloud-sdk's kubectl.1.XX)")
def test_kubectl_as_answers_for_the_impersonated_user(impersonation):
    s = impersonation
    env = {**os.environ, "HOME": temp_home(), "KUBECONFIG": str(s.kubeconfig)}

    def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([BINARIES[NEWEST or ""], *args], capture_output=True, text=True, env=env, timeout=60)

    admin = kubectl("auth", "can-i", "delete", "nodes")
    assert admin.stdout.strip() == "yes"
    as_alice = kubectl("--as=alice", "auth", "can-i", "delete", "nodes")
    assert as_alice.stdout.strip() == "no" and as_alice.returncode == 1
    whoami = kubectl("--as=alice", "--as-group=devs", "auth", "whoami", "-o", "json")
    assert json.loads(whoami.stdout)["status"]["userInfo"]["username"] == "alice", whoami.stderr
    refused = kubectl("--token=bob-token", "--as=carol", "get", "pods")
    assert refused.returncode == 1
    assert 'users "carol" is forbidden: User "bob" cannot impersonate resource "users"' in refused.stderr
