"""CUDA streams, events and pinned host buffers through torch, all guarded.

Without torch, or without a CUDA device, every piece here is a no-op that keeps the same
interface: ``StageStream`` enters nothing, ``record`` gives None, ``wait(None)`` does
nothing and ``PinnedBuffers`` hands out ordinary (pageable) host tensors or plain NumPy
arrays. So the pipeline has one code path and CPU runs take it too.

A stage's stream is what ONNX Runtime's CUDA provider is given as ``user_compute_stream``
(``StageStream.handle``): the stage's torch pre/post-processing and its ORT run then share
one stream, ordered without any host synchronisation; another stage waits for it through
an event (``record`` / ``wait``), never a device-wide synchronise.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import logging
import sys
import threading
from types import TracebackType
from typing import Any

import numpy as np
import numpy.typing as npt

log = logging.getLogger(__name__)

Event = Any  # torch.cuda.Event, or None without CUDA


@functools.cache
def nvidia_driver_present() -> bool:
    """Whether NVIDIA's CUDA driver library loads (``libcuda.so.1``, ``nvcuda.dll``): no
    CUDA provider and no torch CUDA device can run without it, whichever build is
    installed."""
    try:
        ctypes.CDLL("nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1")
    except OSError:
        return False
    return True


def cuda_available() -> bool:
    """Whether torch is installed and sees a CUDA device (never raises). Without NVIDIA's
    driver the answer is no without importing torch (seconds at start on a CPU machine)."""
    if importlib.util.find_spec("torch") is None or not nvidia_driver_present():
        return False
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception as e:  # a broken CUDA install must not stop the CPU path
        log.debug("torch.cuda unavailable: %r", e)
        return False


def is_cuda_device(device: str | int) -> bool:
    """Whether ``device`` names a CUDA device (``cuda``, ``cuda:1`` or an index)."""
    return isinstance(device, int) or str(device).startswith("cuda")


class StageStream:
    """One pipeline stage's CUDA stream, as a context manager that makes it torch's
    current stream.

    ``device``: ``cuda:N`` (or N); anything else, ``enabled=False`` or no CUDA gives an
    inactive stream whose methods do nothing. ``handle``: wrap an existing stream (an ORT
    ``user_compute_stream`` pointer) instead of creating one. torch's current stream is
    per thread, so entering makes it current on the calling thread only; enter one
    instance from one thread at a time (``OnnxModel.stage_stream`` gives one per call).
    """

    def __init__(
        self, device: str | int = "cuda:0", *, handle: int | None = None, enabled: bool = True
    ) -> None:
        self.device = device
        self._stream: Any = None
        self._context: Any = None
        if not (enabled and is_cuda_device(device) and cuda_available()):
            return
        import torch

        if handle is not None:
            self._stream = torch.cuda.ExternalStream(handle, device=device)  # type: ignore[no-untyped-call]
        else:
            self._stream = torch.cuda.Stream(device=device)  # type: ignore[no-untyped-call]

    @property
    def active(self) -> bool:
        """Whether this is a real CUDA stream."""
        return self._stream is not None

    @property
    def handle(self) -> int | None:
        """The raw ``cudaStream_t`` as an int (ORT's ``user_compute_stream``), or None."""
        return int(self._stream.cuda_stream) if self._stream is not None else None

    @property
    def stream(self) -> Any:
        """The torch stream, or None."""
        return self._stream

    def __enter__(self) -> StageStream:
        if self._stream is not None:
            import torch

            self._context = torch.cuda.stream(self._stream)
            self._context.__enter__()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        context, self._context = self._context, None
        if context is not None:
            context.__exit__(kind, error, trace)

    def record(self) -> Event:
        """An event marking everything queued on this stream so far, or None."""
        if self._stream is None:
            return None
        import torch

        event = torch.cuda.Event()  # type: ignore[no-untyped-call]
        event.record(self._stream)
        return event

    def wait(self, event: Event) -> None:
        """Make this stream wait (on the device, not the host) for ``event``."""
        if self._stream is not None and event is not None:
            self._stream.wait_event(event)

    def wait_current(self) -> None:
        """Make this stream wait for the work already queued on torch's current stream
        (the producer of this stage's inputs)."""
        if self._stream is None:
            return
        import torch

        current = torch.cuda.current_stream(self._stream.device)
        if current.cuda_stream != self._stream.cuda_stream:
            self._stream.wait_stream(current)

    def synchronize(self) -> None:
        """Block the host until this stream (only) is done."""
        if self._stream is not None:
            self._stream.synchronize()


def current_stream_event(device: str | int = "cuda:0") -> Event:
    """An event recorded on torch's current stream of ``device``, or None without CUDA."""
    if not (is_cuda_device(device) and cuda_available()):
        return None
    import torch

    event = torch.cuda.Event()  # type: ignore[no-untyped-call]
    event.record(torch.cuda.current_stream(device))
    return event


def synchronize_event(event: Event) -> None:
    """Block the host until ``event`` has happened (no-op for None)."""
    if event is not None:
        event.synchronize()


class PinnedBuffers:
    """Reusable page-locked host buffers, one per (thread, shape, dtype), for the frame
    upload and the result download.

    ``enabled`` and CUDA: ``get`` gives a pinned torch tensor (allocated once, reused);
    otherwise an ordinary torch tensor, or a NumPy array without torch. A buffer is reused
    by the next ``get`` of the same shape on the same thread: copy what must outlive it.
    Each thread has its own buffers, so two threads running one model (overlap: the
    recognizer in tracking and in the swap) never write into a buffer the other is still
    copying from or reading.
    """

    def __init__(self, enabled: bool = True) -> None:
        self.pinned = enabled and cuda_available()
        self._lock = threading.Lock()
        self._buffers: dict[tuple[int, tuple[int, ...], str], Any] = {}
        self._in_flight: dict[int, Event] = {}  # id(buffer) -> event after its last copy

    def get(self, shape: tuple[int, ...], dtype: npt.DTypeLike) -> Any:
        """This thread's host buffer of ``shape`` and NumPy ``dtype`` (contents undefined)."""
        key = (threading.get_ident(), tuple(int(d) for d in shape), np.dtype(dtype).str)
        with self._lock:
            buffer = self._buffers.get(key)
            if buffer is None:
                buffer = self._allocate(key[1], np.dtype(dtype))
                self._buffers[key] = buffer
            return buffer

    def _allocate(self, shape: tuple[int, ...], dtype: np.dtype[Any]) -> Any:
        if importlib.util.find_spec("torch") is None:
            return np.empty(shape, dtype)
        import torch

        wanted = torch.from_numpy(np.empty(0, dtype)).dtype
        return torch.empty(shape, dtype=wanted, pin_memory=self.pinned)

    def _reuse(self, host: Any) -> None:
        """Wait (host) until the last asynchronous copy from or into ``host`` is done."""
        with self._lock:
            event = self._in_flight.pop(id(host), None)
        synchronize_event(event)

    def _copying(self, host: Any, device: Any) -> Event:
        """An event after the copy just queued on torch's current stream of ``device``,
        kept as ``host``'s copy in flight."""
        import torch

        event = torch.cuda.Event()  # type: ignore[no-untyped-call]
        event.record(torch.cuda.current_stream(device))
        with self._lock:
            self._in_flight[id(host)] = event
        return event

    def upload(self, array: npt.NDArray[Any], device: str) -> Any:
        """``array`` as a torch tensor on ``device``: through a reused pinned buffer and
        an asynchronous copy on torch's current stream when pinned, else a plain copy (on
        the CPU the tensor may share ``array``'s memory: read it, don't write it)."""
        import torch

        if not self.pinned or not is_cuda_device(device):
            return torch.from_numpy(np.ascontiguousarray(array)).to(device)
        host = self.get(array.shape, array.dtype)
        self._reuse(host)  # its last copy is done
        host.numpy()[...] = array
        out = host.to(device, non_blocking=True)
        self._copying(host, out.device)
        return out

    def download(self, tensor: Any) -> npt.NDArray[Any]:
        """``tensor`` as a NumPy array (a copy the caller owns): through a reused pinned
        buffer and an asynchronous copy on torch's current stream, waited for by an event
        (not a device-wide synchronise), when pinned and on CUDA."""
        if not self.pinned or tensor.device.type != "cuda":
            return np.array(tensor.detach().cpu().numpy())
        import torch

        dtype = torch.empty(0, dtype=tensor.dtype).numpy().dtype
        host = self.get(tuple(tensor.shape), dtype)
        self._reuse(host)
        host.copy_(tensor, non_blocking=True)
        self._copying(host, tensor.device).synchronize()
        return np.array(host.numpy())

    def clear(self) -> None:
        """Free every thread's buffers (after the copies in flight)."""
        with self._lock:
            events = list(self._in_flight.values())
            self._in_flight.clear()
            self._buffers.clear()
        for event in events:
            synchronize_event(event)
