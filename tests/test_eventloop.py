"""The event loop kubesched's network code runs on (``kubesched/eventloop.py``)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest

from kubesched import eventloop


async def _answer() -> tuple[int, type]:
    await asyncio.sleep(0)
    return 42, type(asyncio.get_running_loop())


def test_run_returns_the_coroutines_value_on_a_loop_of_the_installed_kind():
    value, kind = eventloop.run(_answer())
    assert value == 42
    loop = eventloop.new_event_loop()
    try:
        assert type(loop) is kind
    finally:
        loop.close()


@pytest.mark.skipif(sys.platform == "win32", reason="uvloop does not support Windows")
def test_uvloop_is_used_where_it_is_installed():
    import uvloop

    loop = eventloop.new_event_loop()
    try:
        assert isinstance(loop, uvloop.Loop) and eventloop.NAME == "uvloop"
    finally:
        loop.close()


def test_the_environment_can_keep_asyncios_own_loop():
    code = "from kubesched import eventloop; print(eventloop.NAME, type(eventloop.new_event_loop()).__module__)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "KUBESCHED_EVENT_LOOP": "asyncio"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert out[0] == "asyncio" and out[1].startswith("asyncio."), out
