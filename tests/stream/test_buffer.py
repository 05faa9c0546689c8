"""Ring buffer: order, drop counting, newest wins under a slow consumer, no deadlock on stop."""

from __future__ import annotations

import threading
import time

import pytest

from livecam.stream.ring import RingBuffer


def test_fifo_order_and_batch_limit() -> None:
    ring: RingBuffer[int] = RingBuffer(8)
    for i in range(5):
        ring.put(i)
    assert ring.get_batch(3, timeout=0) == [2, 3, 4]  # newest 3; 0 and 1 are stale
    assert ring.dropped == 2
    assert ring.get_batch(3, timeout=0) == []


def test_full_ring_drops_oldest_and_counts() -> None:
    ring: RingBuffer[int] = RingBuffer(8)
    for i in range(20):
        ring.put(i)
    assert len(ring) == 8
    assert ring.dropped == 12
    assert ring.get_batch(8, timeout=0) == list(range(12, 20))


def test_slow_consumer_gets_latest_frames_in_order() -> None:
    ring: RingBuffer[int] = RingBuffer(8)
    seen: list[int] = []
    done = threading.Event()

    def consumer() -> None:
        while not done.is_set() or len(ring):
            batch = ring.get_batch(1, timeout=0.05)
            seen.extend(batch)
            time.sleep(0.01)  # much slower than the producer

    t = threading.Thread(target=consumer)
    t.start()
    for i in range(2000):
        ring.put(i)
        if i % 100 == 0:
            time.sleep(0.001)
    done.set()
    t.join(5)
    assert not t.is_alive()
    assert seen == sorted(seen) and len(set(seen)) == len(seen), "reordered or duplicated"
    assert seen[-1] == 1999, "the newest frame must win"
    assert ring.dropped + len(seen) == 2000
    assert ring.dropped > 1000


def test_lossless_blocks_producer_instead_of_dropping() -> None:
    ring: RingBuffer[int] = RingBuffer(2, lossless=True)
    assert ring.put(1) and ring.put(2)
    assert ring.put(3, timeout=0.05) is False  # full: waits, then gives up
    got: list[int] = []

    def consumer() -> None:
        while len(got) < 9:
            got.extend(ring.get_batch(8, 1.0))
            time.sleep(0.01)

    t = threading.Thread(target=consumer)
    t.start()
    for i in range(3, 10):
        assert ring.put(i, timeout=2.0)
    t.join(5)
    assert got == list(range(1, 10)) and ring.dropped == 0


@pytest.mark.parametrize("lossless", [False, True])
def test_close_wakes_waiters_without_deadlock(lossless: bool) -> None:
    ring: RingBuffer[int] = RingBuffer(1, lossless=lossless)
    ring.put(0)
    results: list[object] = []
    producer = threading.Thread(target=lambda: results.append(ring.put(1, timeout=10)))
    empty: RingBuffer[int] = RingBuffer(1)
    waiter = threading.Thread(target=lambda: results.append(empty.get_batch(1, timeout=10)))
    producer.start()
    waiter.start()
    time.sleep(0.05)
    ring.close()
    empty.close()
    producer.join(2)
    waiter.join(2)
    assert not producer.is_alive() and not waiter.is_alive(), "close woke both waiters"
    assert ring.put(5) is False, "a closed ring accepts nothing"
    assert ring.get_batch(1, 0) == ([0] if lossless else [1]), "waiting items can still be taken"


def test_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError, match="capacity"):
        RingBuffer(0)
