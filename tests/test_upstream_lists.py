"""Lists at a revision, judged against kube-apiserver v1.37.2: ``resourceVersionMatch=Exact`` lists
the state as it was at that resourceVersion (as etcd answers it), the next page of a paged list is
read at the first page's revision (a write in between is not in it), and the list options
kube-apiserver refuses (``ValidateListOptions``) are refused with the same Status."""

from __future__ import annotations

from typing import Any

import pytest
from tests.live import Server
from tests.upstream import ControlPlane

BASE = "/api/v1/namespaces/default/configmaps"


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory):
    plane = ControlPlane(tmp_path_factory.mktemp("upstream-lists")).start()
    server = Server(tmp_path_factory.mktemp("kubesched-lists") / "data").start()
    try:
        yield plane, server
    finally:
        server.stop()
        plane.stop()


def cm(name: str, value: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"t": "lists"}},
        "data": {"v": value},
    }


def shown(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(o["metadata"]["name"], o["data"]["v"]) for o in body["items"]]


def test_an_exact_list_is_the_state_at_its_revision(sides) -> None:
    answers = []
    for side in sides:
        assert side.request("POST", BASE, cm("a", "1"))[0] == 201
        code, first = side.request("GET", BASE + "?labelSelector=t%3Dlists")
        rv = first["metadata"]["resourceVersion"]
        assert side.request("POST", BASE, cm("b", "1"))[0] == 201
        assert side.request("PUT", BASE + "/a", cm("a", "2"))[0] == 200
        code, now = side.request("GET", BASE + "?labelSelector=t%3Dlists")
        code, then = side.request(
            "GET", BASE + f"?labelSelector=t%3Dlists&resourceVersion={rv}&resourceVersionMatch=Exact"
        )
        assert code == 200, then
        assert then["metadata"]["resourceVersion"] == rv
        assert side.request("DELETE", BASE + "/a")[0] == 200
        code, before_delete = side.request(
            "GET",
            BASE + f"?labelSelector=t%3Dlists&resourceVersion={now['metadata']['resourceVersion']}"
            "&resourceVersionMatch=Exact",
        )
        answers.append((shown(now), shown(then), shown(before_delete)))
        for name in ("b",):
            side.request("DELETE", f"{BASE}/{name}")
    theirs, ours = answers
    assert ours == theirs == ([("a", "2"), ("b", "1")], [("a", "1")], [("a", "2"), ("b", "1")])


def test_the_next_page_is_read_at_the_first_pages_revision(sides) -> None:
    answers = []
    for side in sides:
        for name in ("p1", "p2", "p3"):
            assert side.request("POST", BASE, cm(name, "x"))[0] == 201
        code, first = side.request("GET", BASE + "?labelSelector=t%3Dlists&limit=2")
        assert code == 200 and first["metadata"]["continue"]
        assert side.request("POST", BASE, cm("p0", "late"))[0] == 201  # sorts before p3, after the first page
        assert side.request("DELETE", BASE + "/p3")[0] == 200
        code, rest = side.request(
            "GET", BASE + f"?labelSelector=t%3Dlists&limit=2&continue={first['metadata']['continue']}"
        )
        answers.append(
            (shown(first), shown(rest), rest["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"])
        )
        for name in ("p0", "p1", "p2"):
            side.request("DELETE", f"{BASE}/{name}")
    theirs, ours = answers
    assert ours == theirs == ([("p1", "x"), ("p2", "x")], [("p3", "x")], True)


@pytest.mark.parametrize(
    "query",
    [
        "resourceVersionMatch=Exact",
        "resourceVersionMatch=NotOlderThan&continue=abc",
        "resourceVersion=1&resourceVersionMatch=Newest",
        "resourceVersion=0&resourceVersionMatch=Exact",
        "resourceVersionMatch=Bogus&continue=abc",
    ],
)
def test_list_options_kube_apiserver_refuses_are_refused_alike(sides, query: str) -> None:
    (code, theirs), (ours_code, ours) = (side.request("GET", f"{BASE}?{query}") for side in sides)
    assert (ours_code, ours) == (code, theirs)
    assert code == 422
