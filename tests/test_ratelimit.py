"""clientConnection.qps / burst: client-go's token bucket on every request of the scheduler's
clients (``flowcontrol.NewTokenBucketRateLimiter``), on a fake clock."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kubesched.client.ratelimit import TokenBucket
from kubesched.errors import InputError


class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0
        self.slept: list[float] = []

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


def test_burst_then_qps() -> None:
    clock = FakeClock()
    bucket = TokenBucket(2.0, 3, now=clock.now, sleep=clock.sleep)
    # the bucket starts full: three requests at once, then one every half second, first come first served
    assert [bucket.reserve() for _ in range(5)] == [0.0, 0.0, 0.0, 0.5, 1.0]
    clock.t += 1.0  # two tokens back, both owed already
    assert bucket.reserve() == pytest.approx(0.5)
    clock.t += 10.0  # refilled, but never beyond the burst
    assert [bucket.reserve() for _ in range(4)] == [0.0, 0.0, 0.0, 0.5]


def test_wait_sleeps_for_the_reservation() -> None:
    clock = FakeClock()
    bucket = TokenBucket(4.0, 1, now=clock.now, sleep=clock.sleep)

    async def three() -> None:
        for _ in range(3):
            await bucket.wait()

    asyncio.run(three())
    assert clock.slept == [0.25, 0.5]


@pytest.mark.parametrize(
    ("qps", "burst", "expected"),
    [
        (-1, 0, [0.0] * 20),  # negative: client-go builds no limiter
        (0, 0, [0.0] * 10 + [0.2]),  # zero: DefaultQPS 5, DefaultBurst 10
    ],
)
def test_client_go_defaults(qps: float, burst: int, expected: list[float]) -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps, burst, now=clock.now, sleep=clock.sleep)
    assert [bucket.reserve() for _ in range(len(expected))] == pytest.approx(expected)


def test_the_scheduler_command_limits_its_clients_as_configured(tmp_path: Any, monkeypatch: Any) -> None:
    """``kubesched scheduler`` builds its client with the configuration's qps and burst (and the
    event sink gets its own bucket with the same settings)."""
    from kubesched.app import scheduler as app
    from kubesched.client import remote
    from kubesched.scheduler.config import parse_config

    seen: dict[str, Any] = {}

    class Stop(Exception):
        pass

    def fake_client(kubeconfig: str, **kwargs: Any) -> Any:
        seen.update(kwargs)
        raise Stop

    monkeypatch.setattr(remote, "RemoteClient", fake_client)
    monkeypatch.setattr(app, "check_kubeconfig", lambda path: None)
    config = parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "clientConnection": {"qps": 7.5, "burst": 12},
        }
    )
    with pytest.raises(InputError, match="cannot use kubeconfig"):  # the fake client stops the start-up
        app.run(str(tmp_path / "kubeconfig"), config, {"leader_elect": False})
    assert (seen["qps"], seen["burst"]) == (7.5, 12)
