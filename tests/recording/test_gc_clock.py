"""The GC clock (recording/gc_clock.py): what it counts, and that it leaves ``gc.callbacks`` as
it found it. Its use, the watch's own time without the collections, is in test_watch_cost.py."""

from __future__ import annotations

import gc

from tfgraph_lab.recording.gc_clock import GcClock, gc_clock_installed


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_it_sums_the_time_between_each_start_and_stop() -> None:
    fake = FakeClock()
    clock = GcClock(fake)
    for length in (2.0, 0.5):
        clock("start", {"generation": 2})
        fake.now += length
        clock("stop", {"generation": 2, "collected": 0, "uncollectable": 0})
        fake.now += 10.0  # between collections: not counted
    assert clock.seconds == 2.5


def test_a_stop_without_its_start_counts_nothing() -> None:
    fake = FakeClock()
    clock = GcClock(fake)
    fake.now = 5.0
    clock("stop", {"generation": 0})  # installed while a collection ran
    assert clock.seconds == 0.0


def test_install_and_remove_leave_gc_callbacks_as_they_were() -> None:
    before = list(gc.callbacks)
    clock = GcClock()
    clock.install()
    clock.install()  # once only
    assert gc.callbacks.count(clock) == 1 and gc_clock_installed()
    gc.collect()
    assert clock.seconds > 0.0
    clock.remove()
    assert gc.callbacks == before and not gc_clock_installed()
    clock.remove()  # already gone: nothing to do
    assert gc.callbacks == before
