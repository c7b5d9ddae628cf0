import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


# The suite runs on two workers (.ci/run: pytest-xdist, ``--dist loadgroup``). A module's tests stay
# together, in order, on one worker: many share a module's cluster and build on what the tests before
# them left there. Modules that start upstream's control plane (kube-apiserver, etcd, kube-scheduler:
# several processes on both CPUs) or time a cluster's reactions (leases, failover, fairness, chaos)
# run one after another on one worker, so that no two of them share the machine; the rest spread.
_ONE_AT_A_TIME = {
    "test_chaos",
    "test_failover",
    "test_fairness_http",
    "test_leaderelection",
    "test_durability",
    "test_storage_faults",
    "test_apiserver_limits",
    "test_compiled",
}


def _starts_upstream(module: object) -> bool:
    return any(
        getattr(v, "__module__", None) == "tests.upstream" or getattr(v, "__name__", None) == "tests.upstream"
        for v in vars(module).values()
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        module = getattr(item, "module", None)
        if module is None:
            continue
        name = module.__name__.rsplit(".", 1)[-1]
        heavy = name in _ONE_AT_A_TIME or _starts_upstream(module)
        item.add_marker(pytest.mark.xdist_group("one-at-a-time" if heavy else module.__name__))
