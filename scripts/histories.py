"""The large history differential: N seeded random histories (tests/random_histories.py: pods placed
by others and left to the scheduler, Jobs' pods that finish, pods deleted and terminating,
preemption whose victims take time to go, rollouts, budgets, classes added, claims released, nodes
cordoned, tainted, NotReady, deleted and back)
replayed on kube-apiserver v1.37.2 for kube-scheduler v1.37.2 and on another for ``kubesched scheduler``
side by side (tests/histories.py), a batch of them at a time. Prints each disagreement (the history's
number, its first step that differed, what differed, and the history) and, last, ``agree: A/N``.
``--shrink N`` replays history N and, while it disagrees, lets hypothesis shrink it (its draws, as
for random clusters; ``tests/random_histories.shrunk``): the smallest disagreeing history found.

    python scripts/histories.py --histories 1000
    python scripts/histories.py --shrink 66002
    python scripts/histories.py --numbers 1,3 --together 1    # each alone: no other history's events
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.histories import HISTORY_SETTINGS, Replay, prepare  # noqa: E402
from tests.random_histories import History, make_history, shrunk  # noqa: E402
from tests.upstream import ControlPlane, both_schedulers  # noqa: E402


def judged(replay: Replay) -> str:
    """The replay's disagreement; a step the API server refused is one too, said as such."""
    try:
        return replay.run()
    except (AssertionError, OSError) as exc:
        return f"history {replay.case}: the replay failed: {exc!r}"


def shrink(planes: dict[str, ControlPlane], number: int, minutes: float) -> None:
    """Hypothesis shrinks history ``number`` while it disagrees (each try replayed anew, under a
    number of its own, on the real binaries) for at most ``minutes``; prints each smaller
    disagreeing history as it is found and, last, the smallest."""
    tries = iter(range(10_000_000 + number * 1000, 10_000_000 + number * 1000 + 1000))

    def disagrees(candidate: History) -> str:
        replay = Replay(planes, candidate, next(tries))
        try:
            why = judged(replay)
        finally:
            replay.clean()
        if why:
            print(f"{why}\n  {candidate}", flush=True)
        return why

    found = shrunk(number, disagrees, seconds=minutes * 60)
    if not found:
        print(f"history {number} agrees")
        return
    history, why = found[-1]
    print(f"smallest ({len(found)} disagreeing tries): {why}\n  {history}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--histories", type=int, default=1000)
    ap.add_argument("--shrink", type=int, help="shrink this history (by its number) instead of a run")
    ap.add_argument("--minutes", type=float, default=60, help="how long --shrink may take")
    ap.add_argument("--first", type=int, default=0, help="the first history's number (histories are seeded by number)")
    ap.add_argument(
        "--numbers", help="replay these histories (comma-separated numbers) instead; with --together 1, each alone"
    )
    ap.add_argument("--together", type=int, default=20, help="histories replayed at once")
    ap.add_argument("--logs", type=Path, help="keep the API server's and both schedulers' logs in this folder")
    ap.add_argument("-v", type=int, default=0, help="both schedulers' log verbosity (klog's -v)")
    args = ap.parse_args()
    built = subprocess.run(["bash", str(ROOT / "scripts" / "build_upstream.sh")], capture_output=True, text=True)
    if built.returncode != 0:
        sys.exit(f"histories: scripts/build_upstream.sh failed:\n{built.stderr}")
    bin_dir = Path(built.stdout.strip().splitlines()[-1])
    agree = 0
    started = time.monotonic()
    numbers = list(range(args.first, args.first + args.histories))
    if args.numbers:
        numbers = [int(n) for n in args.numbers.split(",")]
        args.histories = len(numbers)
    with tempfile.TemporaryDirectory(prefix="kubesched-histories-") as scratch:
        tmp = str(args.logs) if args.logs else scratch
        Path(tmp).mkdir(parents=True, exist_ok=True)
        planes: dict[str, ControlPlane] = {}
        try:
            # a kube-apiserver per side (one after the other: their ports apart), so that neither
            # scheduler sees the other side's pods
            for side, folder in (("up", "upstream"), ("ks", "kubesched")):
                planes[side] = ControlPlane(Path(tmp) / folder, bin_dir=bin_dir).start()
                prepare(planes[side])
            schedulers = both_schedulers(planes["up"], Path(tmp), HISTORY_SETTINGS, args.v, ours_on=planes["ks"])
            if args.shrink is not None:
                with schedulers:
                    shrink(planes, args.shrink, args.minutes)
                return
            with schedulers, ThreadPoolExecutor(args.together) as pool:
                for at in range(0, len(numbers), args.together):
                    batch = numbers[at : at + args.together]
                    replays = [Replay(planes, make_history(n), n) for n in batch]
                    for replay, why in zip(replays, pool.map(judged, replays), strict=True):
                        replay.clean()
                        if not why:
                            agree += 1
                            continue
                        print(f"{why}\n  {replay.history}", flush=True)
        finally:
            for plane in planes.values():
                plane.stop()
    seconds = time.monotonic() - started
    print(f"{args.histories} random histories in {seconds:.0f} s (kube-scheduler v1.37.2 on kube-apiserver v1.37.2)")
    print(f"agree: {agree}/{args.histories}")


if __name__ == "__main__":
    main()
