"""The leader elector against client-go's semantics, on a fake clock: acquire, renew, expiry
judged by this replica's own observation time, transitions, release, the renew deadline, and
validation. The lock is an in-memory stand-in with the API server's optimistic concurrency
(the real LeaseLock over HTTP is exercised by the failover tests)."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import random
import re

import pytest

from kubesched.errors import InputError
from kubesched.leaderelection.config import LeaderElectionConfig, from_dict, parse_duration
from kubesched.leaderelection.elector import Callbacks, LeaderElector
from kubesched.leaderelection.record import LeaderElectionRecord

MICRO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
CFG = LeaderElectionConfig(lease_duration=15, renew_deadline=10, retry_period=2)


class FakeClock:
    """Monotonic and wall time that move only when the test advances them."""

    def __init__(self) -> None:
        self.t = 0.0
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.t

    def wall(self) -> float:
        return 1_795_000_000.0 + self.t

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        fut = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.t + seconds, next(self._seq), fut))
        await fut

    async def advance(self, seconds: float) -> None:
        target = self.t + seconds
        await _settle()
        while self._sleepers and self._sleepers[0][0] <= target:
            when, _, fut = heapq.heappop(self._sleepers)
            self.t = max(self.t, when)
            if not fut.done():
                fut.set_result(None)
            await _settle()
        self.t = target
        await _settle()


async def _settle() -> None:
    for _ in range(50):
        await asyncio.sleep(0)


class Conflict(Exception):
    pass


class LeaseServer:
    """One Lease with a resourceVersion; ``down`` fails every call, ``hang`` blocks them."""

    def __init__(self) -> None:
        self.spec: dict | None = None
        self.version = 0
        self.down = False
        self.hang: asyncio.Event | None = None
        self.writes: list[dict] = []

    async def _call(self) -> None:
        if self.hang is not None:
            await self.hang.wait()
        if self.down:
            raise ConnectionRefusedError("connection refused")


class MemoryLock:
    def __init__(self, server: LeaseServer, identity: str) -> None:
        self.server, self.identity, self.seen = server, identity, -1

    def describe(self) -> str:
        return "kube-system/kube-scheduler"

    async def get(self):
        await self.server._call()
        if self.server.spec is None:
            return None
        self.seen = self.server.version
        rec = LeaderElectionRecord.from_lease_spec(self.server.spec)
        return rec, rec.raw()

    async def create(self, record):
        await self.server._call()
        if self.server.spec is not None:
            raise Conflict("already exists")
        self._write(record)

    async def update(self, record):
        await self.server._call()
        if self.seen != self.server.version:
            raise Conflict("the object has been modified; please apply your changes to the latest version")
        self._write(record)

    def _write(self, record):
        self.server.spec = record.to_lease_spec()
        self.server.version += 1
        self.seen = self.server.version
        self.server.writes.append(dict(self.server.spec))


class Replica:
    def __init__(self, server: LeaseServer, clock: FakeClock, identity: str, cfg: LeaderElectionConfig = CFG):
        self.events: list[str] = []
        self.elector = LeaderElector(
            MemoryLock(server, identity),
            cfg,
            Callbacks(
                on_started_leading=lambda: self.events.append("started"),
                on_stopped_leading=lambda: self.events.append("stopped"),
                on_new_leader=lambda who: self.events.append(f"leader {who}"),
            ),
            clock=clock,
            rng=random.Random(1),
        )
        self.task: asyncio.Task[None] | None = None

    def start(self) -> Replica:
        self.task = asyncio.ensure_future(self.elector.run())
        return self


def run(coro):
    return asyncio.run(coro)


def test_first_replica_creates_the_lease_as_client_go_writes_it():
    async def scenario():
        clock, server = FakeClock(), LeaseServer()
        a = Replica(server, clock, "host-a_1").start()
        await clock.advance(0)
        assert a.events == ["leader host-a_1", "started"]
        spec = server.spec
        assert spec["holderIdentity"] == "host-a_1"
        assert spec["leaseDurationSeconds"] == 15
        assert spec["leaseTransitions"] == 0
        assert MICRO.match(spec["acquireTime"]) and spec["acquireTime"] == spec["renewTime"]
        # the renew loop starts at once (PollImmediate), then every retryPeriod; renewals keep
        # acquireTime and the transition count
        await clock.advance(2)
        await clock.advance(2)
        assert len(server.writes) == 4
        assert {w["acquireTime"] for w in server.writes} == {spec["acquireTime"]}
        assert server.spec["renewTime"] > spec["renewTime"]
        assert server.spec["leaseTransitions"] == 0
        a.task.cancel()
        await _settle()

    run(scenario())


def test_follower_waits_for_expiry_by_its_own_observation_then_takes_over():
    async def scenario():
        clock, server = FakeClock(), LeaseServer()
        # a lease renewed "long ago" by the remote clock: only the local observation counts
        server.spec = {
            "holderIdentity": "other_9",
            "leaseDurationSeconds": 15,
            "acquireTime": "2020-01-01T00:00:00.000000Z",
            "renewTime": "2020-01-01T00:00:00.000000Z",
            "leaseTransitions": 4,
        }
        b = Replica(server, clock, "host-b_2").start()
        await clock.advance(0)
        assert b.events == ["leader other_9"]
        await clock.advance(14.9)
        assert "started" not in b.events
        await clock.advance(5)  # 15 s after it first saw the record, plus a jittered retry
        assert b.events[1:] == ["leader host-b_2", "started"]
        assert server.spec["holderIdentity"] == "host-b_2"
        assert server.spec["leaseTransitions"] == 5
        assert server.spec["acquireTime"] != "2020-01-01T00:00:00.000000Z"
        b.task.cancel()
        await _settle()

    run(scenario())


def test_one_leader_among_three_and_a_renewing_leader_keeps_it():
    async def scenario():
        clock, server = FakeClock(), LeaseServer()
        reps = [Replica(server, clock, f"r{i}").start() for i in range(3)]
        await clock.advance(0)
        for _ in range(30):
            await clock.advance(1)
            assert sum(r.elector.leading for r in reps) == 1
        assert [("started" in r.events) for r in reps] == [True, False, False]
        assert server.spec["leaseTransitions"] == 0
        for r in reps:
            r.task.cancel()
        await _settle()

    run(scenario())


def test_renew_deadline_stops_the_leader_before_others_can_take_over():
    async def scenario():
        clock, server = FakeClock(), LeaseServer()
        a = Replica(server, clock, "a").start()
        await clock.advance(0)
        b = Replica(server, clock, "b").start()
        await clock.advance(1)
        last_ok = clock.t
        server.down = True  # the API is unreachable for a
        await clock.advance(2)  # a's next round starts (and keeps failing)
        stopped_at = None
        for _ in range(200):
            await clock.advance(0.1)
            if "stopped" in a.events and stopped_at is None:
                stopped_at = clock.t
        assert stopped_at is not None
        # within renewDeadline of the failing round's start, before the lease (15 s) ran out
        assert stopped_at - last_ok <= 2 + 10 + 0.11
        assert stopped_at - last_ok < 15
        server.down = False
        await clock.advance(20)
        assert b.elector.leading and server.spec["holderIdentity"] == "b"
        assert server.spec["leaseTransitions"] == 1
        b.task.cancel()
        await _settle()

    run(scenario())


def test_a_hung_request_does_not_hold_the_renew_loop_past_the_deadline():
    async def scenario():
        clock, server = FakeClock(), LeaseServer()
        a = Replica(server, clock, "a").start()
        await clock.advance(0)
        server.hang = asyncio.Event()  # requests never answer
        await clock.advance(2 + 10 + 0.1)
        assert not a.elector.leading  # scheduling stops as the round's deadline passes
        await clock.advance(2)  # the release attempt is bounded by retryPeriod
        assert a.events[-1] == "stopped"
        server.hang.set()
        await _settle()

    run(scenario())


def test_release_on_cancel_hands_over_within_about_one_retry_period():
    async def scenario():
        clock, server = FakeClock(), LeaseServer()
        a = Replica(server, clock, "a").start()
        await clock.advance(0)
        b = Replica(server, clock, "b").start()
        await clock.advance(3)
        a.task.cancel()
        await _settle()
        assert a.events[-1] == "stopped"
        assert server.spec["holderIdentity"] == ""
        assert server.spec["leaseDurationSeconds"] == 1
        assert server.spec["leaseTransitions"] == 0
        released = clock.t
        while not b.elector.leading:
            await clock.advance(0.1)
        assert clock.t - released <= 1 + 2 * 2.2  # a 1 s lease seen, then at most one jittered retry
        assert server.spec["leaseTransitions"] == 1
        b.task.cancel()
        await _settle()

    run(scenario())


def test_acquire_retries_with_jitter_up_to_1_2_times_the_retry_period():
    async def scenario():
        clock, server = FakeClock(), LeaseServer()
        a = Replica(server, clock, "a").start()
        await clock.advance(0)
        b = Replica(server, clock, "b").start()
        await clock.advance(60)
        # the leader's renew loop sleeps exactly 2 s (and arms 10 s deadlines); b's acquire retries
        # are the jittered ones
        waits = [s for s in clock.slept if s not in (2.0, 10.0)]
        assert waits and all(2 <= s <= 2 * 2.2 for s in waits)
        assert len(set(waits)) > 1
        a.task.cancel()
        b.task.cancel()
        await _settle()

    run(scenario())


@pytest.mark.parametrize(
    ("section", "field", "message"),
    [
        ({"leaseDuration": "10s"}, "leaderElection.leaseDuration", "LeaseDuration must be greater than RenewDeadline"),
        (
            {"retryPeriod": "9s"},
            "leaderElection.renewDeadline",
            "renewDeadline must be greater than retryPeriod*JitterFactor",
        ),
        ({"retryPeriod": "0s"}, "leaderElection.retryPeriod", "must be greater than zero"),
        ({"resourceLock": "endpoints"}, "leaderElection.resourceLock", "endpoints lock is removed, migrate to leases"),
        ({"resourceLock": "nodes"}, "leaderElection.resourceLock", 'supported values: "leases"'),
        ({"resourceName": ""}, "leaderElection.resourceName", "resourceName is required"),
        ({"leaseDuration": "fifteen"}, "leaderElection.leaseDuration", "time: invalid duration"),
        ({"leaderElect": "yes"}, "leaderElection.leaderElect", "expected true or false"),
        ({"leaseDurations": "15s"}, "leaderElection.leaseDurations", 'unknown field "leaseDurations"'),
    ],
)
def test_invalid_leader_election_settings_name_the_field(section, field, message):
    with pytest.raises(InputError) as err:
        from_dict(section).validate()
    assert err.value.field == field
    assert message in err.value.message


def test_defaults_and_durations():
    cfg = from_dict({}).validate()
    assert (cfg.lease_duration, cfg.renew_deadline, cfg.retry_period) == (15, 10, 2)
    assert (cfg.resource_lock, cfg.resource_namespace, cfg.resource_name) == ("leases", "kube-system", "kube-scheduler")
    assert parse_duration("1m30s", "f") == 90
    assert parse_duration("1.5s", "f") == 1.5
    assert parse_duration("500ms", "f") == 0.5
    assert from_dict({"leaderElect": False, "leaseDuration": "1s"}).validate().leader_elect is False


def test_watchdog_fails_a_leader_whose_renewals_stopped_past_the_tolerance():
    async def scenario():
        clock, server = FakeClock(), LeaseServer()
        a = Replica(server, clock, "a").start()
        await clock.advance(0)
        assert a.elector.check(20) is None
        server.hang = asyncio.Event()
        a.elector.leading = True  # as if the renew loop were stuck rather than timing out
        a.task.cancel()
        await _settle()
        a.elector.observed = a.elector.observed or LeaderElectionRecord("a", 15, None, None, 0)
        clock.t += 15 + 20 + 0.1
        assert a.elector.check(20) == "failed election to renew leadership on lease kube-scheduler"
        b = Replica(server, clock, "b")
        assert b.elector.check(20) is None  # not the leader: healthy

    run(scenario())
