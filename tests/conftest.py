import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


# The suite runs on two workers (.ci/run: pytest-xdist, ``-n 2``), scheduled by module: a module's
# tests stay together, in order, on one worker (many share a module's cluster and build on what the
# tests before them left there). Modules that start upstream's control plane (kube-apiserver, etcd,
# kube-scheduler: several processes on both CPUs) or time a cluster's reactions (leases, failover,
# fairness, chaos) are one unit, run one after another on one worker, so that no two of them share the
# machine; the other modules spread over both. (xdist's own ``loadgroup`` cannot group modules under
# pytest 9.2, whose test ids it no longer rewrites.)
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
_HERE = Path(__file__).parent
_ONE_AT_A_TIME |= {
    path.stem
    for path in _HERE.glob("test_*.py")
    if "from tests.upstream import" in (text := path.read_text()) or "import tests.upstream" in text
}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    from xdist.scheduler import LoadScopeScheduling

    class ByModule(LoadScopeScheduling):
        """xdist's scope scheduling with modules as scopes, the one-at-a-time modules as one."""

        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return "one-at-a-time" if Path(module).stem in _ONE_AT_A_TIME else module

    return ByModule(config, log)  # type: ignore[arg-type]
