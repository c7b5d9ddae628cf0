"""The shortcuts of the speed work give the answers the long ways gave: UIDs, events in their
stored shape, DefaultSelector kept only while no Service changes, quantities checked once, and the
commands' garbage-collector settings."""

from __future__ import annotations

import gc
import random
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubesched.api.validation import quantity_errors
from kubesched.app import gc_settings
from kubesched.cluster.store import Store
from kubesched.errors import InputError
from kubesched.scheduler.listers import Listers

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_seeded_uids_are_uuid4_text_of_the_seeded_draws() -> None:
    """What ``str(uuid.UUID(int=..., version=4))`` gave: seeded runs keep their UIDs."""
    store, rng = Store(seed=7), random.Random(7)
    for _ in range(50):
        assert store.new_uid() == str(uuid.UUID(int=rng.getrandbits(128), version=4))


def test_unseeded_uids_are_version_4() -> None:
    uids = {Store(seed=None).new_uid() for _ in range(50)}
    assert len(uids) == 50
    assert all(uuid.UUID(u).version == 4 and uuid.UUID(u).variant == uuid.RFC_4122 for u in uids)


def test_default_selector_follows_a_service_added_after_it_was_asked() -> None:
    """The last answer is kept for the next pod with the same labels only until a Service or
    controller changes."""
    listers = Listers()
    labels = {"app": "web"}
    assert listers.default_selector("default", labels, None).empty
    service = {"metadata": {"name": "web", "namespace": "default"}, "spec": {"selector": {"app": "web"}}}
    listers.set("Service", service)
    assert not listers.default_selector("default", dict(labels), None).empty
    listers.delete("Service", service)
    assert listers.default_selector("default", dict(labels), None).empty


def test_a_quantity_checked_again_names_the_new_field() -> None:
    for field in ("spec.containers[0].resources.requests[cpu]", "spec.containers[1].resources.requests[cpu]"):
        with pytest.raises(InputError) as err:
            quantity_errors("cpu", "-1", field)
        assert err.value.field == field
        assert "must be greater than or equal to 0" in err.value.message


@pytest.fixture
def restore_gc() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


@pytest.mark.usefixtures("restore_gc")
def test_the_commands_collect_garbage_less_often() -> None:
    from click.testing import CliRunner

    from kubesched.cli import main

    gc.set_threshold(700, 10, 10)
    result = CliRunner().invoke(main, ["simulate", str(EXAMPLES / "basic"), "--summary"])
    assert result.exit_code == 0, result.output
    assert gc.get_threshold() == gc_settings.THRESHOLDS
