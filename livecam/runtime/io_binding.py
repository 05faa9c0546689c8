"""IO-binding runs of one ONNX Runtime session: feeds bound where they are (NumPy arrays
uploaded, through reused pinned host buffers on CUDA when torch has CUDA; OrtValues as they
are; torch tensors through DLPack without a copy), outputs allocated on the session's
device, and each run ordered after the torch work that wrote its inputs.

``OnnxModel.run_bound`` goes through ``BoundRunner.run``; the CUDA-graph runs
(``livecam.runtime.cuda_graph``) share the stream ordering helpers here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import onnxruntime as ort

from livecam.runtime.cuda import (
    PinnedBuffers,
    StageStream,
    current_stream_event,
    synchronize_event,
)
from livecam.runtime.sessions import OpenedModel, TensorSpec


def is_torch(value: Any) -> bool:
    return type(value).__module__.startswith("torch")


def to_numpy(outs: list[Any]) -> list[Any]:
    """OrtValues as NumPy arrays (a device-to-host copy each on CUDA)."""
    return [o.numpy() for o in outs]


def torch_cast(tensor: Any, dtype: type[np.generic]) -> Any:
    """``tensor`` contiguous and of the torch dtype matching NumPy ``dtype``."""
    import torch

    wanted = torch.from_numpy(np.empty(0, dtype)).dtype
    return tensor.to(wanted).contiguous()


def input_types(inputs: Sequence[TensorSpec]) -> dict[str, type[np.generic]]:
    """Input name -> the NumPy dtype the model declares for it."""
    return {s.name: s.dtype for s in inputs}


def stage_stream(device_id: int, compute_stream: int | None) -> StageStream:
    """The session's stream as a ``StageStream`` (inactive without one): torch work
    entered in it is ordered with the session's runs without host synchronisation."""
    return StageStream(
        f"cuda:{device_id}", handle=compute_stream, enabled=compute_stream is not None
    )


@contextlib.contextmanager
def ordered(stream: StageStream, feeds: Mapping[str, Any]) -> Iterator[StageStream]:
    """The session's ``stream`` (inactive without one), made torch's current stream on
    this thread; first, when a feed is a torch tensor, made to wait (on the device) for
    the caller's current stream, which wrote it."""
    if any(is_torch(v) for v in feeds.values()):
        stream.wait_current()
    with stream:
        yield stream


def wait_for_torch(device_id: int) -> None:
    """Block the host until torch's current stream on GPU ``device_id`` is done (that
    stream only): a session on ORT's own stream reads what torch wrote only then."""
    synchronize_event(current_stream_event(f"cuda:{device_id}"))


class BoundRunner:
    """Runs of ``opened``'s session through a fresh IO binding each (see
    ``OnnxModel.run_bound``). ``host_buffers``: the reused pinned host buffers for NumPy
    feeds and outputs (pageable without CUDA)."""

    def __init__(self, opened: OpenedModel, device_id: int) -> None:
        self._session: Any = opened.session
        self._inputs = opened.inputs
        self._outputs = opened.outputs
        self._device = opened.device
        self._device_id = device_id
        self._compute_stream = opened.compute_stream
        self.host_buffers = PinnedBuffers(enabled=self._device == "cuda")

    def stage_stream(self) -> StageStream:
        return stage_stream(self._device_id, self._compute_stream)

    def run(self, feeds: Mapping[str, Any], keep_on_device: bool) -> list[Any]:
        """Every output for ``feeds``: OrtValues with ``keep_on_device``, else NumPy."""
        binding = self._session.io_binding()
        keep: list[Any] = []  # the bound memory must outlive the run
        pinned = self._device == "cuda" and self.host_buffers.pinned
        with ordered(self.stage_stream(), feeds) as stream:
            if self._bind_inputs(binding, feeds, keep, pinned) and not stream.active:
                wait_for_torch(self._device_id)  # ORT's own stream does not wait for torch's
            for spec in self._outputs:
                binding.bind_output(spec.name, self._device, self._device_id)
            self._session.run_with_iobinding(binding)
            outs = binding.get_outputs()
            if keep_on_device:
                return list(outs)
            if pinned:  # on the session's stream: another thread's downloads never wait
                import torch

                return [self.host_buffers.download(torch.utils.dlpack.from_dlpack(o)) for o in outs]
            return to_numpy(outs)

    def _bind_inputs(
        self, binding: Any, feeds: Mapping[str, Any], keep: list[Any], pinned: bool
    ) -> bool:
        """Bind ``feeds`` to ``binding`` (memory to keep alive appended to ``keep``); True
        when an input is GPU memory torch writes on its current stream (a CUDA tensor, or a
        NumPy input uploaded through a pinned buffer)."""
        types = input_types(self._inputs)
        written = False
        for name, value in feeds.items():
            if isinstance(value, ort.OrtValue):
                binding.bind_ortvalue_input(name, value)
                continue
            if is_torch(value):
                tensor = torch_cast(value, types.get(name, np.float32))
                keep.append(tensor)
                binding.bind_ortvalue_input(name, ort.OrtValue.from_dlpack(tensor))
                written = written or tensor.device.type == "cuda"
                continue
            array = np.ascontiguousarray(np.asarray(value), dtype=types.get(name, np.float32))
            if self._device == "cpu":
                keep.append(array)
                binding.bind_cpu_input(name, array)
            elif pinned:
                tensor = self.host_buffers.upload(array, f"cuda:{self._device_id}")
                keep.append(tensor)
                binding.bind_ortvalue_input(name, ort.OrtValue.from_dlpack(tensor))
                written = True
            else:
                keep.append(array)
                binding.bind_ortvalue_input(
                    name,
                    ort.OrtValue.ortvalue_from_numpy(array, self._device, self._device_id),
                )
        return written

    def close(self) -> None:
        """Drop the pinned host buffers and this runner's reference to the session."""
        self.host_buffers.clear()
        self._session = None
