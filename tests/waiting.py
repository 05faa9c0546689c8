"""Test support: wait for a condition instead of sleeping for a guessed time."""

from __future__ import annotations

import time
from collections.abc import Callable


def poll(check: Callable[[], object], timeout_s: float = 10.0, every_s: float = 0.02) -> bool:
    """True once ``check()`` is truthy, False when ``timeout_s`` passed first (a bounded wait
    for the condition, never a timing assertion: the limit is only there so that a broken
    test fails instead of hanging)."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            return bool(check())
        time.sleep(every_s)
    return True
