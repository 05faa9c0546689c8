"""Test helpers for output devices: pyvirtualcam backends (one records every frame, one
always fails) and a private Xvfb display.

They follow pyvirtualcam's backend interface (see ``pyvirtualcam.camera.Backend``) and are
registered with ``pyvirtualcam.register_backend``, so tests drive the real ``Camera``.
Registering mutates pyvirtualcam's global backend table: use unique names and call
``unregister`` (or the fixtures in the tests) when done.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from pyvirtualcam.camera import BACKENDS, register_backend
from pyvirtualcam.util import decode_fourcc

_names = itertools.count()


@dataclass
class ReceivedFrame:
    """One frame as the backend got it, with its perf_counter_ns receive time."""

    frame: npt.NDArray[np.uint8]  # (h, w, 3) copy
    t_ns: int


@dataclass
class RecordingStore:
    """What a recording backend saw: opens, frames and closes (shared by its instances)."""

    name: str
    frames: list[ReceivedFrame] = field(default_factory=list)
    opened: list[dict[str, Any]] = field(default_factory=list)
    closed: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def device(self) -> str:
        return f"/dev/recording-{self.name}"


def _make_recording_class(store: RecordingStore) -> type:
    class RecordingBackend:
        def __init__(
            self,
            *,
            width: int,
            height: int,
            fps: float,
            fourcc: int,
            device: str | None,
            **kw: Any,
        ) -> None:
            fmt = decode_fourcc(fourcc)
            if fmt != "24BG":  # BGR is the only format LiveCam sends
                raise RuntimeError(f"recording backend supports BGR only, got {fmt!r}")
            if device is not None and device != store.device:
                raise RuntimeError(f"device {device!r} not found (have {store.device})")
            self._shape = (height, width, 3)
            self._device = store.device
            with store.lock:
                store.opened.append({"width": width, "height": height, "fps": fps, "fmt": fmt})

        def close(self) -> None:
            with store.lock:
                store.closed += 1

        def send(self, frame: npt.NDArray[np.uint8]) -> None:
            t = time.perf_counter_ns()
            assert frame.ndim == 1 and frame.flags.c_contiguous and frame.dtype == np.uint8
            rec = ReceivedFrame(frame.reshape(self._shape).copy(), t)
            with store.lock:
                store.frames.append(rec)

        def device(self) -> str:
            return self._device

        def native_fourcc(self) -> int | None:
            return None

    return RecordingBackend


class FailingBackend:
    """A backend whose constructor always fails with a recognisable message."""

    MESSAGE = "simulated driver failure: device busy"

    def __init__(self, **kw: Any) -> None:
        raise RuntimeError(self.MESSAGE)

    def close(self) -> None:  # pragma: no cover - never constructed
        pass

    def send(self, frame: npt.NDArray[np.uint8]) -> None:  # pragma: no cover
        pass

    def device(self) -> str:  # pragma: no cover
        return ""

    def native_fourcc(self) -> int | None:  # pragma: no cover
        return None


def unique_name(prefix: str) -> str:
    return f"{prefix}-{next(_names)}-{time.perf_counter_ns()}"


def register_recording_backend(name: str | None = None) -> RecordingStore:
    """Register a recording backend under ``name`` (unique when None); return its store."""
    store = RecordingStore(name or unique_name("livecam-test-recording"))
    register_backend(store.name, _make_recording_class(store))
    return store


def register_failing_backend(name: str | None = None) -> str:
    """Register a backend that always fails to open; return its name."""
    name = name or unique_name("livecam-test-failing")
    register_backend(name, FailingBackend)
    return name


def unregister(name: str) -> None:
    """Remove a backend registered by a test (no error when already gone)."""
    BACKENDS.pop(name, None)
