"""The web UI's HTTP API on a real ``kubesched up``, without a browser: the token, the write header,
and bad input answered 4xx with a message, never 500, nothing stored changed."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
import yaml

from live import Server


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    server = Server(tmp_path_factory.mktemp("ui-api") / "data", command="up", nodes=3).start()
    yield server
    server.stop()


def token(server: Server) -> str:
    return yaml.safe_load(server.kubeconfig.read_text())["users"][0]["user"]["token"]


def ui(server: Server, path: str = "/") -> str:
    return f"http://127.0.0.1:{server.ui_port}{path}"


def call(server: Server, method: str, path: str, body: str | None = None) -> tuple[int, dict]:
    headers = {"Authorization": f"Bearer {token(server)}", "X-Kubesched-UI": "1", "Content-Type": "application/yaml"}
    req = urllib.request.Request(ui(server, path), data=body.encode() if body else None, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as err:
        return err.code, json.load(err)


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        return None


OPENER = urllib.request.build_opener(NoRedirect)


def fetch(server: Server, path: str, headers: dict[str, str] | None = None, data: bytes | None = None):
    """(status, headers, body) without following redirects."""
    req = urllib.request.Request(ui(server, path), data=data, headers=headers or {})
    try:
        with OPENER.open(req, timeout=10) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers, err.read()


def test_the_ui_needs_a_session_or_the_token(cluster: Server) -> None:
    for path, headers in (("/api/state", {}), ("/api/state", {"Cookie": "kubesched-ui=wrong"})):
        assert fetch(cluster, path, headers)[0] == 401
    code, headers, _ = fetch(cluster, "/")
    assert code == 302 and headers["Location"] == "/login"
    # the cluster's token is never taken from the address, not even the right one
    code, _, body = fetch(cluster, f"/?token={token(cluster)}")
    assert code == 401 and b"no longer takes the cluster's token in its address" in body
    # a write without the UI's header is refused even with the token (a cross-site form)
    req = urllib.request.Request(
        ui(cluster, "/api/apply"), data=b"{}", method="POST", headers={"Authorization": f"Bearer {token(cluster)}"}
    )
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=10)
    assert err.value.code == 403
    req = urllib.request.Request(ui(cluster, "/api/state"), headers={"Authorization": f"Bearer {token(cluster)}"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        state = json.load(resp)
    assert [n["name"] for n in state["nodes"]] == ["node-0", "node-1", "node-2"]
    assert set(state["queue"]) == {"activeQ", "backoffQ", "unschedulablePods", "gated", "inFlight"}


def session_of(headers) -> str:
    cookie = headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    return cookie.split(";")[0]


def test_the_printed_login_address_opens_one_session_once(cluster: Server) -> None:
    login = cluster.ui_login_url()
    assert token(cluster) not in login
    path = login.split(str(cluster.ui_port), 1)[1]
    code, headers, _ = fetch(cluster, path)
    assert code == 302 and headers["Location"] == "/"
    cookie = session_of(headers)
    assert token(cluster) not in cookie
    assert fetch(cluster, "/api/state", {"Cookie": cookie})[0] == 200
    code, _, body = fetch(cluster, path)  # spent
    assert code == 401 and b"has been used or has expired" in body


def test_the_login_form_takes_the_clusters_token_by_post(cluster: Server) -> None:
    code, _, body = fetch(cluster, "/login", data=b"token=wrong")
    assert code == 401 and b"not this cluster" in body
    code, headers, _ = fetch(cluster, "/login", data=f"token={token(cluster)}".encode())
    assert code == 302
    assert fetch(cluster, "/api/state", {"Cookie": session_of(headers)})[0] == 200


@pytest.mark.parametrize("path", ["/login", "/static/app.js", "/api/state"])
def test_every_answer_forbids_framing_and_inline_code(cluster: Server, path: str) -> None:
    _, headers, _ = fetch(cluster, path)
    policy = headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in policy and "default-src 'self'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert headers["X-Frame-Options"] == "DENY" and headers["X-Content-Type-Options"] == "nosniff"


def test_a_request_for_another_host_is_refused(cluster: Server) -> None:
    """A DNS-rebinding page (attacker.example resolving to 127.0.0.1) sends its own Host."""
    auth = {"Authorization": f"Bearer {token(cluster)}"}
    code, _, body = fetch(cluster, "/api/state", {**auth, "Host": f"attacker.example:{cluster.ui_port}"})
    assert code == 403 and b"answers only for" in body
    assert fetch(cluster, "/api/state", {**auth, "Host": f"localhost:{cluster.ui_port}"})[0] == 200


ALIAS_BOMB = (
    "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
    "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
    "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\ni: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n"
)


@pytest.mark.parametrize(
    ("body", "code", "words"),
    [
        ("kind: [unclosed", 400, "does not parse"),
        ("- just\n- a list\n", 400, "not an object with metadata"),
        ("apiVersion: v1\nkind: Gadget\nmetadata: {name: g}\n", 400, 'no matches for kind "Gadget" in version "v1"'),
        ("apiVersion: v1\nkind: Pod\nmetadata: {}\nspec: {}\n", 400, "metadata.name: Required value"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: when}\ndata: {at: 2026-11-25T10:00:00Z}\n", 200, "applied"),
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec: {containers: []}\n", 422, "spec.containers"),
        ("", 400, "no object"),
        # what the API server's own decoding refuses, refused here the same way, before parsing
        (ALIAS_BOMB, 400, "aliases expand the document past"),
        ("a: " + "[" * 5000 + "]" * 5000 + "\n", 400, "nested more than 500 levels deep"),
        # kubectl's strict field validation: an unknown field is refused, not dropped
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: strict}\nbogus: 1\ndata: {a: b}\n",
            400,
            'unknown field "bogus"',
        ),
        # names are path segments: no traversal to another resource, no query injected
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: ../configmaps/victim}\n", 400, "may not contain '/'"),
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: x, namespace: '..'}\n", 400, "may not be '..'"),
        # a name no kind takes, long enough that the URL is past the API server's line (a 500 before)
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + "a" * 100_000 + "}\n", 400, "no more than 253"),
    ],
)
def test_bad_yaml_is_a_4xx_never_a_500(cluster: Server, body: str, code: int, words: str) -> None:
    before = cluster.request("GET", "/api/v1/namespaces/default/pods")[1]["items"]
    got, doc = call(cluster, "POST", "/api/apply", body)
    assert got == code, doc
    assert words in (doc.get("message") or json.dumps(doc))
    assert cluster.request("GET", "/api/v1/namespaces/default/pods")[1]["items"] == before


HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("[1, 2]", "must be a KubeSchedulerConfiguration object"),
        (HEAD + "profiles: 7\n", "profiles"),
        (HEAD + "percentageOfNodesToScore: 250\n", "percentageOfNodesToScore"),
        ("percentageOfNodesToScore: 50\n", "apiVersion"),
    ],
)
def test_a_bad_configuration_leaves_the_scheduler_alone(cluster: Server, body: str, words: str) -> None:
    before = call(cluster, "GET", "/api/config")[1]["restarts"]
    got, doc = call(cluster, "PUT", "/api/config", body)
    assert got == 400 and words in doc["message"]
    assert call(cluster, "GET", "/api/config")[1]["restarts"] == before


def raw_call(server: Server, method: str, path: str, body: bytes | None = None) -> tuple[int, dict]:
    headers = {"Authorization": f"Bearer {token(server)}", "X-Kubesched-UI": "1", "Content-Type": "application/yaml"}
    req = urllib.request.Request(ui(server, path), data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as err:
        return err.code, json.load(err)


def test_invalid_utf8_is_a_400_not_a_500(cluster: Server) -> None:
    body = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: \xff\xfe}\n"
    code, doc = raw_call(cluster, "POST", "/api/apply", body)
    assert code == 400 and doc["message"] == "the YAML is not UTF-8: invalid byte at offset 48"
    code, doc = raw_call(cluster, "PUT", "/api/config", b"\xc3\x28")
    assert code == 400 and "not UTF-8" in doc["message"]


@pytest.mark.parametrize(
    "path",
    [
        "/api/objects/Pod/default/..%2Fconfigmaps%2Fvictim",
        "/api/objects/Pod/default/victim%3FdryRun=All",
        "/api/yaml/Pod/default/..%2Fconfigmaps%2Fvictim",
        "/api/objects/ConfigMap/..%2F..%2Fapi%2Fv1%2Fnamespaces%2Fdefault%2Fconfigmaps/victim",
    ],
)
def test_paths_built_from_url_parts_cannot_reach_another_resource(cluster: Server, path: str) -> None:
    victim = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "victim"}, "data": {"a": "b"}}
    cluster.request("POST", "/api/v1/namespaces/default/configmaps", victim)
    method = "GET" if path.startswith("/api/yaml/") else "DELETE"
    headers = {"Authorization": f"Bearer {token(cluster)}", "X-Kubesched-UI": "1"}
    req = urllib.request.Request(ui(cluster, path), method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            code, body = resp.status, resp.read()
    except urllib.error.HTTPError as err:
        code, body = err.code, err.read()
    assert code in (400, 404), (code, body[:300])
    assert cluster.request("GET", "/api/v1/namespaces/default/configmaps/victim")[0] == 200
