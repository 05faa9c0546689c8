"""The bounded ring buffer between threads: newest wins, drops are counted, never reorders."""

from __future__ import annotations

import threading
from collections import deque
from typing import Generic, TypeVar

T = TypeVar("T")


class RingBuffer(Generic[T]):
    """A bounded FIFO shared by one producer and one consumer.

    Live mode (``lossless=False``): ``put`` never blocks; when full, the oldest item is
    dropped and counted. ``get_batch`` takes the newest ``max_items`` waiting items and
    drops (and counts) older ones, so a slow consumer always works on fresh frames.
    Lossless mode: ``put`` waits for room instead (offline rendering, exact frame counts).
    Items always come out in the order they went in. ``close`` wakes every waiter.
    """

    def __init__(self, capacity: int = 8, lossless: bool = False) -> None:
        if capacity < 1:
            raise ValueError(f"ring capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self.lossless = lossless
        self._items: deque[T] = deque()
        self._cond = threading.Condition()
        self._closed = False
        self.dropped = 0
        self.put_count = 0

    def put(self, item: T, timeout: float | None = None) -> bool:
        """Add ``item``; return False if it was not added (closed, or lossless and timed out)."""
        with self._cond:
            if self.lossless:
                has_room = self._cond.wait_for(
                    lambda: self._closed or len(self._items) < self.capacity, timeout
                )
                if not has_room or self._closed:
                    return False
            elif self._closed:
                return False
            elif len(self._items) >= self.capacity:
                self._items.popleft()
                self.dropped += 1
            self._items.append(item)
            self.put_count += 1
            self._cond.notify_all()
            return True

    def get_batch(self, max_items: int, timeout: float | None) -> list[T]:
        """Wait up to ``timeout`` s for items; return up to ``max_items`` of them, oldest first.

        Returns an empty list on timeout or when closed and empty.
        """
        with self._cond:
            self._cond.wait_for(lambda: self._closed or bool(self._items), timeout)
            if not self.lossless:
                while len(self._items) > max_items:
                    self._items.popleft()
                    self.dropped += 1
            batch = [self._items.popleft() for _ in range(min(max_items, len(self._items)))]
            if batch:
                self._cond.notify_all()
            return batch

    def close(self) -> None:
        """Stop accepting items and wake every waiting thread. Waiting items can still be taken."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    @property
    def closed(self) -> bool:
        return self._closed

    def __len__(self) -> int:
        with self._cond:
            return len(self._items)
