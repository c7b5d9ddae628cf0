"""CronJobs on the cluster's clock (the CronJob controller over the virtual clock of
``kubesched.testing``, with the Job controller and the scheduler): a Job per scheduled minute named
``<cronjob>-<minutes since the epoch>``, Forbid and Replace, suspend, the history limits; and the
API: defaults, a schedule cron does not understand refused, ``kubectl get cronjobs`` columns."""

from __future__ import annotations

import subprocess

import pytest

from kubesched.api.cron import next_after, parse_schedule
from kubesched.controllers.cronjob import job_name
from live import Server, kubectl_binaries, temp_home, wait_for

BINARIES = kubectl_binaries()
KUBECTL = BINARIES.get("1.37") or next(iter(BINARIES.values()), None)


@pytest.mark.parametrize(
    ("schedule", "after", "expected"),
    [
        ("*/5 * * * *", 0, 300),
        ("*/5 * * * *", 300, 600),
        ("@hourly", 59, 3600),
        ("0 0 * * *", 1, 86400),
        ("30 2 * * 1-5", 0, 2 * 3600 + 1800),  # the clock starts on 2026-01-01, a Thursday
        ("30 2 * * 0,6", 0, 2 * 86400 + 2 * 3600 + 1800),  # the weekend: Saturday the 3rd
    ],
)
def test_next_scheduled_time(schedule: str, after: float, expected: float) -> None:
    assert next_after(schedule, None, after) == expected


@pytest.mark.parametrize("bad", ["61 * * * *", "* * *", "TZ=UTC 0 * * * *", "@sometimes"])
def test_bad_schedules_are_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_schedule(bad)


def cron_job(name: str, schedule: str = "* * * * *", **spec: object) -> dict:
    pod = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedule": schedule, "jobTemplate": {"spec": {"template": {"spec": pod}}}, **spec},
    }


@pytest.fixture
def cluster():
    from helpers import make_node
    from kubesched.testing import Cluster

    return Cluster(*(make_node(f"n{i}") for i in range(2)), workloads=True)


def jobs(cluster, owner: str) -> list[str]:
    return sorted(
        j["metadata"]["name"]
        for j in cluster.store.list("Job", "default")[0]
        if any(r.get("name") == owner for r in j["metadata"].get("ownerReferences") or [])
    )


def test_a_job_per_minute_and_the_history_limit(cluster) -> None:
    cluster.create(cron_job("tick", successfulJobsHistoryLimit=2))
    cluster.settle()
    cluster.advance(60 * 5 + 30)  # pods of a Never job complete after the hollow kubelet's run time
    made = jobs(cluster, "tick")
    # a Job each minute from 00:01; the first three completed and were deleted past the limit of 2
    assert made == [job_name("tick", 4 * 60), job_name("tick", 5 * 60)]
    assert made[0] == "tick-29453764"  # 2026-01-01T00:04:00Z in minutes since the Unix epoch
    cj = cluster.store.get("CronJob", "default", "tick")
    assert cj["status"]["lastScheduleTime"] == "2026-01-01T00:05:00Z"
    assert cj["status"].get("lastSuccessfulTime")
    job = cluster.store.get("Job", "default", made[1])
    assert job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] == "2026-01-01T00:05:00Z"
    reasons = {e.get("reason") for e in cluster.store.list("Event", "default")[0]}
    assert {"SuccessfulCreate", "SawCompletedJob", "SuccessfulDelete"} <= reasons
    # the deleted Jobs took their pods with them (background propagation, as realJobControl
    # deletes; batch/v1's default would orphan them): only the kept Jobs' pods remain
    pods = [p["metadata"]["name"] for p in cluster.store.list("Pod", "default")[0]]
    assert {name.rsplit("-", 1)[0] for name in pods} == set(made), pods  # no orphan left behind


def test_a_schedule_that_never_fires_makes_no_job_and_no_error(cluster) -> None:
    """``0 0 30 2 *`` (February 30): accepted, as robfig/cron accepts it, and never due."""
    assert next_after("0 0 30 2 *", None, 0) == float("inf")
    cluster.create(cron_job("never", "0 0 30 2 *"), cron_job("tick"))
    cluster.settle()
    cluster.advance(3 * 60)
    assert jobs(cluster, "never") == [] and jobs(cluster, "tick")  # the other CronJob goes on
    assert cluster.controllers is not None
    assert cluster.controllers.health.loops["controller-manager"].errors == 0


def test_forbid_replace_and_suspend(cluster) -> None:
    long_run = {"kubesched.io/run-seconds": "-1"}  # pods that never finish
    for name, policy in (("forbid", "Forbid"), ("replace", "Replace")):
        cj = cron_job(name, concurrencyPolicy=policy)
        cj["spec"]["jobTemplate"]["spec"]["template"]["metadata"] = {"annotations": long_run}
        cluster.create(cj)
    cluster.create(cron_job("paused", suspend=True))
    cluster.settle()
    cluster.advance(60 * 3 + 10)
    assert jobs(cluster, "forbid") == [job_name("forbid", 60)]  # the first still runs: later times are skipped
    assert jobs(cluster, "replace") == [job_name("replace", 180)]  # each time deletes the running one first
    assert jobs(cluster, "paused") == []
    active = cluster.store.get("CronJob", "default", "replace")["status"]["active"]
    assert [a["name"] for a in active] == [job_name("replace", 180)]
    replaced = {
        p["metadata"]["name"].rsplit("-", 1)[0]
        for p in cluster.store.list("Pod", "default")[0]
        if p["metadata"]["name"].startswith("replace-") and not p["metadata"].get("deletionTimestamp")
    }
    assert replaced == {job_name("replace", 180)}  # the replaced Jobs' pods are gone or going


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    s = Server(tmp_path_factory.mktemp("cronjobs") / "data").start()
    try:
        yield s
    finally:
        s.stop()


def test_the_api(server: Server) -> None:
    path = "/apis/batch/v1/namespaces/default/cronjobs"
    code, made = server.request("POST", path, cron_job("nightly", "0 3 * * *"))
    assert code == 201, made
    spec = made["spec"]
    assert (spec["concurrencyPolicy"], spec["suspend"], spec["successfulJobsHistoryLimit"]) == ("Allow", False, 3)
    assert spec["failedJobsHistoryLimit"] == 1
    code, status = server.request("POST", path, cron_job("bad", "61 * * * *"))
    assert code == 422 and status["details"]["causes"][0]["field"] == "spec.schedule"
    code, status = server.request("POST", path, cron_job("zoned", "TZ=UTC 0 3 * * *"))
    assert code == 422 and "use timeZone field instead" in status["message"]
    names = {r["name"] for r in server.request("GET", "/apis/batch/v1")[1]["resources"]}
    assert {"cronjobs", "cronjobs/status"} <= names


@pytest.mark.skipif(KUBECTL is None, reason="no kubectl (scripts/build_upstream.sh builds v1.37.2)")
def test_kubectl(server: Server) -> None:
    env = {"HOME": temp_home(), "KUBECONFIG": str(server.kubeconfig), "PATH": "/usr/bin:/bin"}

    def kubectl(*args: str) -> str:
        done = subprocess.run([str(KUBECTL), *args], capture_output=True, text=True, env=env, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout

    kubectl("create", "cronjob", "hello", "--image=busybox", "--schedule=*/10 * * * *")
    rows = [line.split() for line in kubectl("get", "cj", "hello").splitlines()]
    assert rows[0] == ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"]
    assert rows[1][:8] == ["hello", "*/10", "*", "*", "*", "*", "<none>", "False"]
    wait_for(lambda: kubectl("get", "cj", "hello", "-o", "jsonpath={.spec.concurrencyPolicy}") == "Allow")


def test_simulate_expands_workloads_into_their_pods(tmp_path) -> None:
    """simulate runs the controllers of the workloads it is given: a Deployment's ReplicaSet makes its
    replicas, a StatefulSet its ordinals one after the other (each Ready before the next), a
    DaemonSet a pod per node, and a CronJob's next run is its Job, whose pod is placed; nothing is
    warned about or left out (StatefulSets were ignored: ``bound 0/0``)."""
    import json
    import sys

    import yaml

    from helpers import make_node

    def workload(kind: str, name: str, spec: dict) -> dict:
        template = {
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "100m"}}}]},
        }
        return {
            "apiVersion": "apps/v1",
            "kind": kind,
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": template, **spec},
        }

    objects = [
        {"apiVersion": "v1", **make_node("n0")},
        {"apiVersion": "v1", **make_node("n1")},
        workload("Deployment", "web", {"replicas": 2}),
        workload("StatefulSet", "db", {"replicas": 3, "serviceName": "db"}),
        workload("DaemonSet", "agent", {}),
        cron_job("nightly", "0 3 * * *"),
    ]
    src = tmp_path / "in.yaml"
    src.write_text(yaml.safe_dump_all(objects))
    done = subprocess.run(
        [sys.executable, "-m", "kubesched", "simulate", str(src), "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    pods = json.loads(done.stdout)["pods"]
    names = sorted(p["name"] for p in pods)
    assert [n for n in names if n.startswith("db-")] == ["db-0", "db-1", "db-2"]
    assert len([n for n in names if n.startswith("web-")]) == 2
    assert sorted(p["nodeName"] for p in pods if p["name"].startswith("agent-")) == ["n0", "n1"]
    # the Job of the next 03:00 after the simulation's start, named as the CronJob controller names it
    assert len([n for n in names if n.startswith("nightly-")]) == 1
    assert all(p["nodeName"] for p in pods)
