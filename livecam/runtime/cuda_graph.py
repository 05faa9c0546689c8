"""Runs that replay a CUDA graph: ORT captures the graph of a session on the thread that
runs it, with the device buffers bound then, so every run goes through the same fixed
buffers on one dedicated thread, one run at a time."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import onnxruntime as ort

from livecam.runtime.io_binding import input_types, is_torch, ordered, stage_stream, wait_for_torch
from livecam.runtime.sessions import OpenedModel

#: warm-up runs that leave a CUDA graph captured: ORT captures it on the thread that runs
#: the session after one or two regular runs there (two in recent versions)
GRAPH_CAPTURE_RUNS = 3


class CudaGraphRunner:
    """The CUDA-graph runs of ``opened``'s session (see ``OnnxModel.run_bound``)."""

    def __init__(self, opened: OpenedModel, device_id: int) -> None:
        self._session: Any = opened.session
        self._inputs = opened.inputs
        self._outputs = opened.outputs
        self._device = opened.device
        self._device_id = device_id
        self._compute_stream = opened.compute_stream
        self._graph_binding: Any = None
        self._graph_inputs: dict[str, Any] = {}
        self._graph_outputs: list[Any] = []
        self._graph_lock = threading.Lock()  # one run at a time through the fixed buffers
        self._graph_thread: ThreadPoolExecutor | None = None

    def run(
        self, feeds: Mapping[str, Any], take: Callable[[list[Any]], list[Any]] | None
    ) -> list[Any]:
        """A run through the fixed device buffers a CUDA graph was captured with, on the
        session's graph thread (ORT keeps a captured graph per thread). ``take`` turns the
        output buffers into what is returned while no other run can overwrite them (None:
        the buffers themselves). Inputs are copied into the bound buffers on the session's
        stream, so the replay reads them after the copies."""
        stream_of = stage_stream(self._device_id, self._compute_stream)
        with self._graph_lock, ordered(stream_of, feeds) as stream:
            runner = self._graph_runner()
            if self._fill_graph_inputs(feeds) and not stream.active:
                wait_for_torch(self._device_id)  # ORT's own stream does not wait for torch's
            runner.submit(self._session.run_with_iobinding, self._graph_binding).result()
            outs = list(self._graph_outputs)
            if take is None:
                return outs
            taken = take(outs)
            if not stream.active:
                wait_for_torch(self._device_id)  # copies out on torch's stream end before a replay
            return taken

    def _graph_runner(self) -> ThreadPoolExecutor:
        """The thread every run of the CUDA graph happens on, with the binding of fixed
        device buffers (both made on first use). One thread: ORT captures and replays the
        graph per thread, and ``warmup`` then captures it before the stream starts rather
        than on the pipeline's threads, where another thread's CUDA calls would break the
        capture (ORT captures in cudaStreamCaptureModeGlobal)."""
        if self._graph_thread is None:
            binding = self._session.io_binding()
            dev = self._device_id
            for spec in self._inputs:
                value = ort.OrtValue.ortvalue_from_shape_and_type(
                    list(spec.shape), spec.dtype, self._device, dev
                )
                self._graph_inputs[spec.name] = value
                binding.bind_ortvalue_input(spec.name, value)
            for out in self._outputs:
                value = ort.OrtValue.ortvalue_from_shape_and_type(
                    list(out.shape), out.dtype, self._device, dev
                )
                self._graph_outputs.append(value)
                binding.bind_ortvalue_output(out.name, value)
            self._graph_binding = binding
            self._graph_thread = ThreadPoolExecutor(1, thread_name_prefix="livecam-cuda-graph")
        return self._graph_thread

    def _fill_graph_inputs(self, feeds: Mapping[str, Any]) -> bool:
        """Copy ``feeds`` into the graph's input buffers (same addresses every run); True
        when torch copied on its current stream (a NumPy feed is a synchronous ORT copy)."""
        types = input_types(self._inputs)
        written = False
        for name, value in feeds.items():
            target = self._graph_inputs[name]
            if is_torch(value) or isinstance(value, ort.OrtValue):
                import torch

                source = value if is_torch(value) else torch.utils.dlpack.from_dlpack(value)
                torch.utils.dlpack.from_dlpack(target).copy_(source.reshape(target.shape()))
                written = True
            else:
                target.update_inplace(
                    np.ascontiguousarray(np.asarray(value), dtype=types.get(name, np.float32))
                )
        return written

    def close(self) -> None:
        """Stop the graph thread and drop the device buffers and the session."""
        thread, self._graph_thread = self._graph_thread, None
        if thread is not None:
            thread.shutdown(wait=True)
        self._graph_binding = None
        self._graph_inputs = {}
        self._graph_outputs = []
        self._session = None
