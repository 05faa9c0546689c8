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
    """The consumer thread takes one batch per 100 frames put: it gets the newest each time,
    in order, and every older frame is counted as dropped (lockstep, no timing)."""
    ring: RingBuffer[int] = RingBuffer(8)
    seen: list[int] = []
    go, taken = threading.Semaphore(0), threading.Semaphore(0)

    def consumer() -> None:
        for _ in range(20):
            go.acquire()
            seen.extend(ring.get_batch(1, timeout=5))
            taken.release()

    t = threading.Thread(target=consumer)
    t.start()
    for i in range(2000):
        ring.put(i)
        if i % 100 == 99:
            go.release()
            assert taken.acquire(timeout=10), "the consumer took nothing"
    t.join(5)
    assert not t.is_alive()
    assert seen == list(range(99, 2000, 100)), "the newest frame of each round must win"
    assert ring.dropped == 2000 - len(seen) and len(ring) == 0


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


class WaitSignal(threading.Condition):
    """A condition that says when a thread starts waiting on it (``waiting``)."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self.waiting.set()  # set under the lock: close() can only run once the wait began
        return super().wait(timeout)


def waiting_ring(capacity: int, lossless: bool) -> tuple[RingBuffer[int], WaitSignal]:
    ring: RingBuffer[int] = RingBuffer(capacity, lossless=lossless)
    ring._cond = signal = WaitSignal()
    return ring, signal


@pytest.mark.parametrize("lossless", [False, True])
def test_close_wakes_a_waiting_consumer(lossless: bool) -> None:
    ring, signal = waiting_ring(1, lossless)
    results: list[list[int]] = []
    waiter = threading.Thread(target=lambda: results.append(ring.get_batch(1, timeout=30)))
    waiter.start()
    assert signal.waiting.wait(10), "get_batch on an empty ring waits"
    ring.close()
    waiter.join(10)
    assert not waiter.is_alive() and results == [[]], "close woke the consumer"
    assert ring.put(5) is False, "a closed ring accepts nothing"


def test_close_wakes_a_waiting_lossless_producer() -> None:
    ring, signal = waiting_ring(1, lossless=True)
    ring.put(0)
    results: list[bool] = []
    producer = threading.Thread(target=lambda: results.append(ring.put(1, timeout=30)))
    producer.start()
    assert signal.waiting.wait(10), "put on a full lossless ring waits"
    ring.close()
    producer.join(10)
    assert not producer.is_alive() and results == [False], "close woke the producer"
    assert ring.get_batch(1, 0) == [0], "waiting items can still be taken"


def test_a_live_ring_never_waits_to_put() -> None:
    ring, signal = waiting_ring(1, lossless=False)
    assert ring.put(0) and ring.put(1, timeout=30)  # full: the oldest is dropped instead
    assert not signal.waiting.is_set() and ring.dropped == 1
    ring.close()
    assert ring.get_batch(1, 0) == [1], "waiting items can still be taken"


def test_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError, match="capacity"):
        RingBuffer(0)
