import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

# CEL's syntax module raises the interpreter's recursion limit when it loads (rules nest 250 deep and
# are walked recursively), and the DRA selectors' celpy Environment lowers it as it is made (then put
# back): both happen here, before any hypothesis test, whose runs keep a limit of their own and warn
# when a test changes it
import kubesched.apiextensions.cel.syntax  # noqa: F401
from kubesched.scheduler.plugins.dynamicresources.cel import environment

environment()

# The suite runs on two workers (.ci/run: pytest-xdist, ``-n 2``), scheduled by module: a module's
# tests stay together, in order, on one worker (many share a module's cluster and build on what the
# tests before them left there). The modules that time a cluster's reactions (leases, failover,
# fairness, chaos, watch deadlines) or run schedulers side by side over whole histories are one unit,
# run one after another on one worker, so that no two of them share the machine; the other modules,
# those that compare kube-apiserver's answers with kubesched's included, spread over both. (xdist's
# own ``loadgroup`` cannot group modules under pytest 9.2, whose test ids it no longer rewrites.)
_ONE_AT_A_TIME = {
    "test_chaos",
    "test_failover",
    "test_fairness_http",
    "test_leaderelection",
    "test_durability",
    "test_storage_faults",
    "test_apiserver_limits",
    "test_histories",
    "test_upstream_histories",
    "test_upstream_differential",
    "test_upstream_gang_differential",
    "test_upstream_apiserver",
    "test_upstream_kubectl_session",
    "test_upstream_binding",
    "test_oracle",
}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    from xdist.scheduler import LoadScopeScheduling

    class ByModule(LoadScopeScheduling):
        """xdist's scope scheduling with modules as scopes, the one-at-a-time modules as one."""

        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return "one-at-a-time" if Path(module).stem in _ONE_AT_A_TIME else module

    # the modules in collection order, not by their number of tests: the one-at-a-time unit, first
    # met at test_apiserver_limits, then starts with the run
    config.option.loadscopereorder = False
    return ByModule(config, log)  # type: ignore[arg-type]
