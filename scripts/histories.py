"""The large history differential: N seeded random histories (tests/random_histories.py: pods placed
by others and left to the scheduler, Jobs' pods that finish, pods deleted and terminating,
preemption whose victims take time to go, nodes cordoned, tainted, NotReady, deleted and back)
replayed on one kube-apiserver v1.37.2 for kube-scheduler v1.37.2 and ``kubesched scheduler`` side
by side (tests/histories.py), a batch of them at a time. Prints each disagreement (the history's
number, its first step that differed, what differed, and the history) and, last, ``agree: A/N``.
``--shrink N`` replays history N and, while it disagrees, drops one step at a time (the steps after
the first disagreement first) as long as the rest still disagrees: the smallest history found.

    python scripts/histories.py --histories 1000
    python scripts/histories.py --shrink 66002
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.histories import HISTORY_SETTINGS, PRIORITY_CLASSES, Replay  # noqa: E402
from tests.random_histories import History, make_history  # noqa: E402
from tests.upstream import ControlPlane, both_schedulers  # noqa: E402


def judged(replay: Replay) -> str:
    """The replay's disagreement; a step the API server refused is one too, said as such."""
    try:
        return replay.run()
    except (AssertionError, OSError) as exc:
        return f"history {replay.case}: the replay failed: {exc!r}"


def shrink(plane: ControlPlane, number: int) -> None:
    """Drop steps of history ``number`` while the rest still disagrees (each try replayed anew,
    under a number of its own), and print the smallest disagreeing history."""
    history = make_history(random.Random(number))
    tries = iter(range(10_000_000 + number * 1000, 10_000_000 + number * 1000 + 1000))

    def disagrees(candidate: History) -> str:
        replay = Replay(plane, candidate, next(tries))
        try:
            return judged(replay)
        finally:
            replay.clean()

    why = disagrees(history)
    if not why:
        print(f"history {number} agrees")
        return
    print(f"{why}\n  {history}", flush=True)
    i = len(history.steps) - 1
    while i >= 0:
        candidate = History(history.nodes, history.steps[:i] + history.steps[i + 1 :])
        found = disagrees(candidate) if candidate.steps else ""
        if found:
            history, why = candidate, found
            print(f"  without step {i}: still disagrees", flush=True)
        i -= 1
    print(f"smallest: {why}\n  {history}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--histories", type=int, default=1000)
    ap.add_argument("--shrink", type=int, help="shrink this history (by its number) instead of a run")
    ap.add_argument("--first", type=int, default=0, help="the first history's number (histories are seeded by number)")
    ap.add_argument("--together", type=int, default=20, help="histories replayed at once")
    args = ap.parse_args()
    built = subprocess.run(["bash", str(ROOT / "scripts" / "build_upstream.sh")], capture_output=True, text=True)
    if built.returncode != 0:
        sys.exit(f"histories: scripts/build_upstream.sh failed:\n{built.stderr}")
    bin_dir = Path(built.stdout.strip().splitlines()[-1])
    agree = 0
    started = time.monotonic()
    numbers = list(range(args.first, args.first + args.histories))
    with tempfile.TemporaryDirectory(prefix="kubesched-histories-") as tmp:
        plane = ControlPlane(Path(tmp) / "upstream", bin_dir=bin_dir).start()
        try:
            for pc in PRIORITY_CLASSES:
                plane.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", pc)
            if args.shrink is not None:
                with both_schedulers(plane, Path(tmp), HISTORY_SETTINGS):
                    shrink(plane, args.shrink)
                return
            with both_schedulers(plane, Path(tmp), HISTORY_SETTINGS), ThreadPoolExecutor(args.together) as pool:
                for at in range(0, len(numbers), args.together):
                    batch = numbers[at : at + args.together]
                    replays = [Replay(plane, make_history(random.Random(n)), n) for n in batch]
                    for replay, why in zip(replays, pool.map(judged, replays), strict=True):
                        replay.clean()
                        if not why:
                            agree += 1
                            continue
                        print(f"{why}\n  {replay.history}", flush=True)
        finally:
            plane.stop()
    seconds = time.monotonic() - started
    print(f"{args.histories} random histories in {seconds:.0f} s (kube-scheduler v1.37.2 on kube-apiserver v1.37.2)")
    print(f"agree: {agree}/{args.histories}")


if __name__ == "__main__":
    main()
