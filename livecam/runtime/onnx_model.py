"""One ONNX model in one ONNX Runtime session: its I/O contract, the provider really used
(and why not the one asked for), and batch-first runs.

``OnnxModel`` is what every ONNX part holds. Inputs are cast to the dtype the model
declares (an fp16 export takes float16), ``run_batch`` runs a batch in one call when the
model's batch axis is dynamic (or was rewritten to be, ``dynamic_batch=True``), else in
chunks of its fixed batch size. On CUDA, ``run`` goes through IO binding; ``run_bound``
keeps inputs and outputs on the device (OrtValues, or torch tensors via DLPack).

Opening the session (provider choice, TensorRT cache, batch rewrite) is
``livecam.runtime.sessions``; IO binding and pinned buffers ``livecam.runtime.io_binding``;
CUDA-graph replays ``livecam.runtime.cuda_graph``. This module composes them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from livecam.runtime.cuda import StageStream
from livecam.runtime.cuda_graph import GRAPH_CAPTURE_RUNS, CudaGraphRunner
from livecam.runtime.io_binding import BoundRunner, to_numpy
from livecam.runtime.providers import ProviderSpec
from livecam.runtime.sessions import (
    MEMORY,
    MemoryLevel,
    RuntimeOptions,
    TensorSpec,
    memory_options,
    open_model_session,
)

__all__ = [
    "GRAPH_CAPTURE_RUNS",
    "MEMORY",
    "MemoryLevel",
    "OnnxModel",
    "RuntimeOptions",
    "TensorSpec",
    "memory_options",
]


class OnnxModel:
    """An ONNX file loaded on the best provider for ``options.provider``.

    ``providers`` says what was asked for (the concrete provider, e.g. ``cuda`` for
    ``auto`` on a CUDA build) and what the session really uses; when they differ,
    ``fallback_reason`` holds the likely cause (e.g. the CUDA library that failed to load)
    and ``fallback_fix`` what to do. ``model_id`` defaults to the file name without its
    extension. ``dynamic_batch``: a model with a fixed batch of 1 is rewritten to a dynamic
    batch axis and the rewrite verified (``batching.make_dynamic_batch``), else it keeps
    its fixed batch (``run_batch`` then loops); ``batch_rewritten`` says which. ``sha256``:
    the file's, when the caller already knows it (the rewrite cache is keyed by it).
    ``provider_chain`` is what was handed to ORT (names and provider options).
    ``compute_stream``: a ``cudaStream_t`` as an int (``StageStream.handle``), or the
    ``StageStream`` itself (then kept alive with the session), that a CUDA or TensorRT
    session runs on (``user_compute_stream``); ``compute_stream`` is None on other
    providers. On CUDA, NumPy inputs and outputs go through reused pinned host
    buffers when torch has CUDA.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        options: RuntimeOptions | None = None,
        *,
        model_id: str | None = None,
        dynamic_batch: bool = False,
        compute_stream: int | StageStream | None = None,
        sha256: str | None = None,
    ) -> None:
        if isinstance(compute_stream, StageStream):  # kept alive as long as the session
            self._stage_owner: StageStream | None = compute_stream
            compute_stream = compute_stream.handle
        else:
            self._stage_owner = None
        self.path = Path(path)
        self.options = opts = options if options is not None else RuntimeOptions()
        self.model_id = model_id if model_id is not None else self.path.stem
        opened = open_model_session(
            self.path,
            opts,
            dynamic_batch=dynamic_batch,
            compute_stream=compute_stream,
            sha256=sha256,
        )
        self.loaded_path = opened.loaded_path
        self.batch_rewritten = self.loaded_path != self.path
        self.session: Any = opened.session
        self.provider_chain: tuple[ProviderSpec, ...] = opened.provider_chain
        self.providers = opened.providers
        self.fallback_reason = opened.fallback_reason
        self.fallback_fix = opened.fallback_fix
        self.cuda_graph = opened.cuda_graph
        #: where IO binding puts tensors: "cuda" on CUDA/TensorRT, else "cpu"
        self.device = opened.device
        #: the stream the session runs on (``user_compute_stream``), None: ORT's own
        self.compute_stream = opened.compute_stream
        self.inputs = opened.inputs
        self.outputs = opened.outputs
        self._bound = BoundRunner(opened, opts.device_id)
        #: reused pinned host buffers for NumPy feeds and outputs (pageable without CUDA)
        self.host_buffers = self._bound.host_buffers
        self._graph = CudaGraphRunner(opened, opts.device_id) if self.cuda_graph else None

    @property
    def has_user_compute_stream(self) -> bool:
        """Whether the session runs on a stream LiveCam gave it (``compute_stream``)."""
        return self.compute_stream is not None

    def stage_stream(self) -> StageStream:
        """The session's stream as a ``StageStream`` (inactive without one): torch work
        entered in it is ordered with the session's runs without host synchronisation."""
        return self._bound.stage_stream()

    @property
    def input_names(self) -> list[str]:
        return [s.name for s in self.inputs]

    @property
    def output_names(self) -> list[str]:
        return [s.name for s in self.outputs]

    @property
    def fixed_batch(self) -> int | None:
        """The first input's required batch size, or None when its batch axis is dynamic."""
        return self.inputs[0].fixed_batch if self.inputs else None

    def _cast(self, feeds: Mapping[str, npt.ArrayLike]) -> dict[str, npt.NDArray[Any]]:
        types = {s.name: s.dtype for s in self.inputs}
        return {
            name: np.ascontiguousarray(np.asarray(value), dtype=types.get(name, np.float32))
            for name, value in feeds.items()
        }

    def run(self, feeds: Mapping[str, npt.ArrayLike]) -> list[npt.NDArray[Any]]:
        """Every output for ``feeds`` (each cast to the dtype its input declares), as NumPy
        arrays. On CUDA (with ``io_binding``) through IO binding."""
        if self.cuda_graph or (self.device != "cpu" and self.options.io_binding):
            return list(self.run_bound(feeds))
        return list(self.session.run(None, self._cast(feeds)))

    def run_bound(self, feeds: Mapping[str, Any], *, keep_on_device: bool = False) -> list[Any]:
        """Every output for ``feeds`` through IO binding.

        A feed is array-like (cast to the declared dtype and uploaded), an ``OrtValue``
        (bound as it is) or a torch tensor (cast, made contiguous and bound without a copy
        through DLPack, on its own device). Outputs are allocated on the session's device;
        with ``keep_on_device`` they come back as OrtValues (``torch.from_dlpack`` takes
        them), else as NumPy arrays (one download each). With a CUDA graph the device
        buffers are the same every run: the next run overwrites returned OrtValues.
        On CUDA the run comes after the work already queued on torch's current stream (the
        inputs' producer): on the session's stream (``compute_stream``) by a device-side
        wait, without one by the host waiting for torch's stream (that stream only).
        """
        if self._graph is not None:
            return self._graph.run(feeds, None if keep_on_device else to_numpy)
        return self._bound.run(feeds, keep_on_device)

    def run_torch(self, feeds: Mapping[str, Any]) -> list[Any]:
        """``run_bound`` with the outputs as torch tensors on the session's device (sharing
        ORT's memory; copies when a CUDA graph reuses its buffers)."""
        import torch

        if self._graph is not None:
            return self._graph.run(
                feeds, lambda outs: [torch.utils.dlpack.from_dlpack(o).clone() for o in outs]
            )
        return [
            torch.utils.dlpack.from_dlpack(o) for o in self.run_bound(feeds, keep_on_device=True)
        ]

    def run_batch(
        self, feeds: Mapping[str, npt.ArrayLike], batched: Sequence[str]
    ) -> list[npt.NDArray[Any]]:
        """Every output for a batch: the inputs named in ``batched`` share axis 0 (the
        batch), the others are fed whole to each call. One call when the batch axis is
        dynamic (chunks of ``options.max_batch`` when set), else chunks of the fixed batch
        size (the last one padded by repeating its last item); outputs are concatenated
        along axis 0, padding removed."""
        arrays = {k: np.asarray(v) for k, v in feeds.items()}
        n = len(arrays[batched[0]])
        fixed = self.fixed_batch
        limit = self.options.max_batch
        step = fixed if fixed is not None else (limit if 0 < limit < n else None)
        if step is None or step == n:
            return self.run(arrays)
        parts: list[list[npt.NDArray[Any]]] = []
        for start in range(0, n, step):
            chunk = dict(arrays)
            for name in batched:
                piece = arrays[name][start : start + step]
                if fixed is not None and len(piece) < step:
                    pad = np.repeat(piece[-1:], step - len(piece), axis=0)
                    piece = np.concatenate([piece, pad])
                chunk[name] = piece
            outs = self.run(chunk)
            parts.append([o[: min(step, n - start)] for o in outs])
        return [np.concatenate(column) for column in zip(*parts, strict=True)]

    def warmup(self) -> None:
        """``options.warmup_runs`` runs on zeros of the declared shapes (dynamic axes: 1,
        or 64 for spatial axes), so the first real call does not pay for allocation,
        kernel choice (cuDNN search) or CUDA graph capture (a CUDA-graph model runs at
        least ``GRAPH_CAPTURE_RUNS`` times, so its graph is captured here)."""
        feeds: dict[str, npt.NDArray[Any]] = {}
        for spec in self.inputs:
            dims = [
                d if isinstance(d, int) and d > 0 else (1 if i == 0 else 64)
                for i, d in enumerate(spec.shape)
            ]
            feeds[spec.name] = np.zeros(dims, spec.dtype)
        runs = self.options.warmup_runs
        if self.cuda_graph:  # capture now, not during the first frames of the stream
            runs = max(runs, GRAPH_CAPTURE_RUNS)
        for _ in range(runs):
            self.run(feeds)

    def close(self) -> None:
        """Drop the session and its device buffers (ORT frees its memory when the last
        reference goes) and the pinned host buffers."""
        if self._graph is not None:
            self._graph.close()
        self._bound.close()
        self.session = None
