"""API Priority and Fairness, as the embedded API server shares itself between users
(``apiserver/filters/fairness.py``): seats handed round robin between the flows with requests waiting, so
one user's thousand requests wait for each other and not another's one; a flow's full queue and a
wait past the limit are 429s; a client that goes away leaves its place to the next."""

from __future__ import annotations

import asyncio

import pytest

from kubesched.apiserver.filters.fairness import Fairness, FairnessSettings


def run(coro):
    return asyncio.run(coro)


@pytest.mark.parametrize("seats", [1, 2, 4])
def test_a_flood_waits_for_itself_not_for_the_other_flow(seats: int) -> None:
    """Flow A sends 40 requests at once, then B one: B is served within a round of A's seats."""

    async def main() -> list[str]:
        fair = Fairness(FairnessSettings(seats=seats))
        done: list[str] = []

        async def request(flow: str, i: int) -> None:
            assert await fair.acquire(flow)
            await asyncio.sleep(0)  # the request's work, between awaits
            await asyncio.sleep(0)
            done.append(f"{flow}{i}")
            fair.release()

        flood = [asyncio.create_task(request("a", i)) for i in range(40)]
        await asyncio.sleep(0)
        other = asyncio.create_task(request("b", 0))
        await asyncio.gather(*flood, other)
        return done

    done = run(main())
    assert len(done) == 41
    assert done.index("b0") <= 2 * seats  # not behind the 40: the next seat that frees is B's
    assert sorted(done) == sorted([f"a{i}" for i in range(40)] + ["b0"])


def test_a_full_queue_and_a_long_wait_are_refused_and_counted() -> None:
    async def main() -> tuple[list[bool], bool, int]:
        fair = Fairness(FairnessSettings(seats=1, queue_length=2, wait_limit=0.05))
        assert await fair.acquire("a")  # holds the only seat
        waiting = [asyncio.create_task(fair.acquire("a")) for _ in range(2)]
        await asyncio.sleep(0)
        third = await fair.acquire("a")  # the queue holds two
        timed_out = await asyncio.gather(*waiting)  # nobody released: both waited too long
        return [third], all(not t for t in timed_out), fair.rejected

    third, timed_out, rejected = run(main())
    assert third == [False] and timed_out and rejected == 3


def test_a_client_that_leaves_while_waiting_gives_its_place_to_the_next() -> None:
    async def main() -> list[str]:
        fair = Fairness(FairnessSettings(seats=1))
        got: list[str] = []
        assert await fair.acquire("a")

        async def wait(flow: str) -> None:
            if await fair.acquire(flow):
                got.append(flow)
                fair.release()

        gone = asyncio.create_task(wait("b"))
        stays = asyncio.create_task(wait("c"))
        await asyncio.sleep(0)
        gone.cancel()
        await asyncio.sleep(0)
        fair.release()
        await stays
        assert fair.busy == 0 and not fair.queues
        return got

    assert run(main()) == ["c"]


def test_off_lets_everything_in() -> None:
    async def main() -> bool:
        fair = Fairness(FairnessSettings(enabled=False, seats=1))
        results = [await fair.acquire("a") for _ in range(100)]
        return all(results) and fair.busy == 0

    assert run(main())


@pytest.mark.parametrize(
    ("path", "long"),
    [
        ("/api/v1/namespaces/a/pods/p/log", True),
        ("/api/v1/namespaces/a/pods/p/exec", True),
        ("/api/v1/namespaces/a/pods/p/portforward", True),
        ("/api/v1/namespaces/a/services/s/proxy/x/y", True),
        ("/api/v1/namespaces/a/pods/log", False),  # a pod named log
        ("/api/v1/namespaces/a/pods", False),
        ("/apis/apps/v1/namespaces/a/deployments/d/scale", False),
    ],
)
def test_streams_take_no_seat(path: str, long: bool) -> None:
    """``kubectl logs -f`` and ``exec`` hold their request open: four of them would take every seat."""
    from kubesched.apiserver.server import _long_running

    assert _long_running(path) is long
