"""Test support: a child process that obeys file permissions even when the tests run as
root (root writes and reads anywhere, so "a folder made read-only" or "a key nobody may
read" would test nothing)."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable

#: capabilities that let root ignore permissions: CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
_OVERRIDES = (1, 2)
_PR_CAPBSET_DROP = 24


def drop_overrides() -> None:
    """Run in a child before its exec (``preexec_fn``): the overrides leave the bounding
    set, so the exec'ed program has them no more."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in _OVERRIDES:
        if libc.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def obeying_permissions() -> Callable[[], None] | None:
    """``preexec_fn`` for a child that must obey file permissions (None: not root)."""
    return drop_overrides if os.geteuid() == 0 else None
