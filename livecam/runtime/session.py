"""One ONNX model in one ONNX Runtime session: its I/O contract, the provider really used
(and why not the one asked for), and batch-first runs.

``OnnxModel`` is what every ONNX part holds. Inputs are cast to the dtype the model
declares (an fp16 export takes float16), ``run_batch`` runs a batch in one call when the
model's batch axis is dynamic (or was rewritten to be, ``dynamic_batch=True``), else in
chunks of its fixed batch size. On CUDA, ``run`` goes through IO binding; ``run_bound``
keeps inputs and outputs on the device (OrtValues, or torch tensors via DLPack).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
import platformdirs

from livecam.errors import ConfigError
from livecam.pipeline.parts import Providers
from livecam.runtime.providers import (
    CUDA,
    TENSORRT,
    ConvAlgoSearch,
    Prefer,
    ProviderSpec,
    available_providers,
    cuda_options,
    open_session,
    short_name,
    tensorrt_options,
    wanted_provider,
)

log = logging.getLogger(__name__)

GraphOptimization = Literal["disable", "basic", "extended", "all"]

_ORT_DTYPES = {
    "tensor(float)": np.float32,
    "tensor(float16)": np.float16,
    "tensor(double)": np.float64,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(uint8)": np.uint8,
    "tensor(bool)": np.bool_,
}
_GRAPH_LEVELS = {
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}
#: providers whose tensors live in CUDA memory (IO binding puts OrtValues there)
_CUDA_DEVICE = (CUDA, TENSORRT)


@dataclass(frozen=True)
class RuntimeOptions:
    """How ONNX Runtime sessions are made.

    ``provider``: the preference (``auto``: the best accelerator in this build, TensorRT
    only when asked for). ``threads`` / ``inter_threads``: CPU intra-/inter-op threads (0:
    ORT's default). ``graph_optimization``: ORT's graph optimisation level. ``cache_dir``:
    LiveCam's cache folder (None: ``$LIVECAM_CACHE_DIR`` or the user cache dir), TensorRT
    engines and timing caches in its ``tensorrt/``, verified dynamic-batch rewrites in its
    ``onnx/``. ``device_id``: the GPU. ``cudnn_conv_algo_search``: the CUDA provider's cuDNN
    algorithm search.
    ``cuda_graph``: capture each run as a CUDA graph, only for models whose inputs and
    outputs all have fixed shapes (others run without; runs then go through IO binding
    with the same device buffers). ``tensorrt_fp16``: fp16 TensorRT engines. ``io_binding``:
    ``run`` binds inputs/outputs on the device when the session is on CUDA.
    ``warmup_runs``: runs of ``warmup()``. ``provider_options``: extra ORT options per
    provider (``{"cuda": {"arena_extend_strategy": "kSameAsRequested"}}``), over LiveCam's.
    """

    provider: Prefer = "auto"
    threads: int = 0
    cache_dir: Path | None = None
    provider_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    inter_threads: int = 0
    graph_optimization: GraphOptimization = "all"
    device_id: int = 0
    cudnn_conv_algo_search: ConvAlgoSearch = "EXHAUSTIVE"
    cuda_graph: bool = False
    tensorrt_fp16: bool = True
    io_binding: bool = True
    warmup_runs: int = 1

    def __post_init__(self) -> None:
        for name in ("threads", "inter_threads", "device_id", "warmup_runs"):
            if getattr(self, name) < 0:
                raise ConfigError(
                    f"runtime.{name} is {getattr(self, name)}", "use 0 or a positive number"
                )
        if self.graph_optimization not in _GRAPH_LEVELS:
            raise ConfigError(
                f"runtime.graph_optimization is {self.graph_optimization!r}",
                f"use one of {', '.join(_GRAPH_LEVELS)}",
            )
        if self.cudnn_conv_algo_search not in ("EXHAUSTIVE", "HEURISTIC", "DEFAULT"):
            raise ConfigError(
                f"runtime.cudnn_conv_algo_search is {self.cudnn_conv_algo_search!r}",
                "use EXHAUSTIVE, HEURISTIC or DEFAULT",
            )

    @property
    def cache_root(self) -> Path:
        """LiveCam's cache folder: ``cache_dir``, else ``$LIVECAM_CACHE_DIR``, else the user
        cache dir."""
        env = os.environ.get("LIVECAM_CACHE_DIR")
        return self.cache_dir or (
            Path(env) if env else Path(platformdirs.user_cache_dir("livecam"))
        )

    def session_options(self) -> ort.SessionOptions:
        """ORT session options: thread counts and graph optimisation level."""
        opts = ort.SessionOptions()
        opts.log_severity_level = 3  # ORT's notes on a file's layout are not the user's concern
        if self.threads > 0:
            opts.intra_op_num_threads = self.threads
        if self.inter_threads > 0:
            opts.inter_op_num_threads = self.inter_threads
        opts.graph_optimization_level = _GRAPH_LEVELS[self.graph_optimization]
        return opts

    def provider_options_for(self, cuda_graph: bool) -> dict[str, dict[str, Any]]:
        """Provider options for ``provider_chain``: CUDA's (device, cuDNN search, CUDA graph
        when ``cuda_graph``), TensorRT's (caches under ``cache_root``), then the extra
        ``provider_options`` over them."""
        trt_dir = self.cache_root / "tensorrt"
        out: dict[str, dict[str, Any]] = {
            "cuda": dict(cuda_options(self.device_id, self.cudnn_conv_algo_search, cuda_graph)),
            "tensorrt": dict(tensorrt_options(trt_dir, self.device_id, self.tensorrt_fp16)),
        }
        for name, extra in self.provider_options.items():
            key = short_name(name)
            out[key] = {**out.get(key, {}), **extra}
        return out


@dataclass(frozen=True)
class TensorSpec:
    """One input or output of a model: name, shape (a str or None for a dynamic axis) and
    NumPy dtype."""

    name: str
    shape: tuple[int | str | None, ...]
    dtype: type[np.generic]

    @property
    def fixed_batch(self) -> int | None:
        """The batch size the model requires (axis 0), or None when it is dynamic."""
        first = self.shape[0] if self.shape else None
        return first if isinstance(first, int) and first > 0 else None

    @property
    def fixed(self) -> bool:
        """Whether every axis has a fixed size."""
        return all(isinstance(d, int) and d > 0 for d in self.shape)


def _spec(arg: Any) -> TensorSpec:
    return TensorSpec(arg.name, tuple(arg.shape), _ORT_DTYPES.get(arg.type, np.float32))


def _is_torch(value: Any) -> bool:
    return type(value).__module__.startswith("torch")


def _model_shapes_fixed(path: Path) -> bool:
    """Whether every input and output of the ONNX file has a fixed shape."""
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    return all(
        all(d.HasField("dim_value") and d.dim_value > 0 for d in v.type.tensor_type.shape.dim)
        for v in [*graph.input, *graph.output]
    )


class OnnxModel:
    """An ONNX file loaded on the best provider for ``options.provider``.

    ``providers`` says what was asked for (the concrete provider, e.g. ``cuda`` for
    ``auto`` on a CUDA build) and what the session really uses; when they differ,
    ``fallback_reason`` holds the likely cause (e.g. the CUDA library that failed to load)
    and ``fallback_fix`` what to do. ``model_id`` defaults to the file name without its
    extension. ``dynamic_batch``: a model with a fixed batch of 1 is rewritten to a dynamic
    batch axis and the rewrite verified (``batching.make_dynamic_batch``), else it keeps
    its fixed batch (``run_batch`` then loops); ``batch_rewritten`` says which.
    ``provider_chain`` is what was handed to ORT (names and provider options).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        options: RuntimeOptions | None = None,
        *,
        model_id: str | None = None,
        dynamic_batch: bool = False,
    ) -> None:
        self.path = Path(path)
        self.options = opts = options if options is not None else RuntimeOptions()
        self.model_id = model_id if model_id is not None else self.path.stem
        self.loaded_path = self.path
        if dynamic_batch:
            from livecam.runtime.batching import make_dynamic_batch

            rewritten = make_dynamic_batch(self.path, opts.cache_root / "onnx")
            self.loaded_path = rewritten if rewritten is not None else self.path
        self.batch_rewritten = self.loaded_path != self.path
        wanted = wanted_provider(opts.provider)
        self.cuda_graph = (
            opts.cuda_graph and wanted == CUDA and _model_shapes_fixed(self.loaded_path)
        )
        if opts.cuda_graph and wanted == CUDA and not self.cuda_graph:
            log.info("%s: CUDA graph off (it needs fixed input/output shapes)", self.path.name)
        provider_opts = opts.provider_options_for(self.cuda_graph)
        if wanted == TENSORRT and TENSORRT in available_providers():
            (opts.cache_root / "tensorrt").mkdir(parents=True, exist_ok=True)
        opened = open_session(
            self.loaded_path, opts.provider, opts.session_options(), options=provider_opts
        )
        self.session = opened.session
        self.provider_chain: tuple[ProviderSpec, ...] = opened.chain
        self.providers = Providers(
            requested=(short_name(opened.wanted),),
            used=(short_name(opened.used),),
            reason=opened.fallback_reason,
        )
        self.fallback_reason = opened.fallback_reason
        self.fallback_fix = opened.fix
        self.cuda_graph = self.cuda_graph and opened.used == CUDA
        #: where IO binding puts tensors: "cuda" on CUDA/TensorRT, else "cpu"
        self.device = "cuda" if opened.used in _CUDA_DEVICE else "cpu"
        self.inputs = tuple(_spec(a) for a in self.session.get_inputs())
        self.outputs = tuple(_spec(a) for a in self.session.get_outputs())
        self._graph_binding: Any = None
        self._graph_inputs: dict[str, Any] = {}
        self._graph_outputs: list[Any] = []

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
        """
        if self.cuda_graph:
            return self._run_graph(feeds, keep_on_device)
        binding = self.session.io_binding()
        keep: list[Any] = []  # the bound memory must outlive the run
        types = {s.name: s.dtype for s in self.inputs}
        for name, value in feeds.items():
            if isinstance(value, ort.OrtValue):
                binding.bind_ortvalue_input(name, value)
                continue
            if _is_torch(value):
                tensor = _torch_cast(value, types.get(name, np.float32))
                keep.append(tensor)
                binding.bind_ortvalue_input(name, ort.OrtValue.from_dlpack(tensor))
                continue
            array = np.ascontiguousarray(np.asarray(value), dtype=types.get(name, np.float32))
            keep.append(array)
            if self.device == "cpu":
                binding.bind_cpu_input(name, array)
            else:
                binding.bind_ortvalue_input(
                    name,
                    ort.OrtValue.ortvalue_from_numpy(array, self.device, self.options.device_id),
                )
        for spec in self.outputs:
            binding.bind_output(spec.name, self.device, self.options.device_id)
        self.session.run_with_iobinding(binding)
        outs = binding.get_outputs()
        return list(outs) if keep_on_device else [o.numpy() for o in outs]

    def run_torch(self, feeds: Mapping[str, Any]) -> list[Any]:
        """``run_bound`` with the outputs as torch tensors on the session's device (sharing
        ORT's memory; copies when a CUDA graph reuses its buffers)."""
        import torch

        outs = [torch.from_dlpack(o) for o in self.run_bound(feeds, keep_on_device=True)]
        return [o.clone() for o in outs] if self.cuda_graph else outs

    def _run_graph(self, feeds: Mapping[str, Any], keep_on_device: bool) -> list[Any]:
        """A run through the fixed device buffers a CUDA graph was captured with."""
        if self._graph_binding is None:
            binding = self.session.io_binding()
            dev = self.options.device_id
            for spec in self.inputs:
                value = ort.OrtValue.ortvalue_from_shape_and_type(
                    list(spec.shape), spec.dtype, self.device, dev
                )
                self._graph_inputs[spec.name] = value
                binding.bind_ortvalue_input(spec.name, value)
            for out in self.outputs:
                value = ort.OrtValue.ortvalue_from_shape_and_type(
                    list(out.shape), out.dtype, self.device, dev
                )
                self._graph_outputs.append(value)
                binding.bind_ortvalue_output(out.name, value)
            self._graph_binding = binding
        types = {s.name: s.dtype for s in self.inputs}
        for name, value in feeds.items():
            target = self._graph_inputs[name]
            if _is_torch(value) or isinstance(value, ort.OrtValue):
                import torch

                source = value if _is_torch(value) else torch.from_dlpack(value)
                torch.from_dlpack(target).copy_(source.reshape(target.shape()))
            else:
                target.update_inplace(
                    np.ascontiguousarray(np.asarray(value), dtype=types.get(name, np.float32))
                )
        self.session.run_with_iobinding(self._graph_binding)
        outs = self._graph_outputs
        return list(outs) if keep_on_device else [o.numpy() for o in outs]

    def run_batch(
        self, feeds: Mapping[str, npt.ArrayLike], batched: Sequence[str]
    ) -> list[npt.NDArray[Any]]:
        """Every output for a batch: the inputs named in ``batched`` share axis 0 (the
        batch), the others are fed whole to each call. One call when the batch axis is
        dynamic, else chunks of the fixed batch size (the last one padded by repeating its
        last item); outputs are concatenated along axis 0, padding removed."""
        arrays = {k: np.asarray(v) for k, v in feeds.items()}
        n = len(arrays[batched[0]])
        step = self.fixed_batch
        if step is None or step == n:
            return self.run(arrays)
        parts: list[list[npt.NDArray[Any]]] = []
        for start in range(0, n, step):
            chunk = dict(arrays)
            for name in batched:
                piece = arrays[name][start : start + step]
                if len(piece) < step:
                    pad = np.repeat(piece[-1:], step - len(piece), axis=0)
                    piece = np.concatenate([piece, pad])
                chunk[name] = piece
            outs = self.run(chunk)
            parts.append([o[: min(step, n - start)] for o in outs])
        return [np.concatenate(column) for column in zip(*parts, strict=True)]

    def warmup(self) -> None:
        """``options.warmup_runs`` runs on zeros of the declared shapes (dynamic axes: 1,
        or 64 for spatial axes), so the first real call does not pay for allocation,
        kernel choice (cuDNN search) or CUDA graph capture."""
        feeds: dict[str, npt.NDArray[Any]] = {}
        for spec in self.inputs:
            dims = [
                d if isinstance(d, int) and d > 0 else (1 if i == 0 else 64)
                for i, d in enumerate(spec.shape)
            ]
            feeds[spec.name] = np.zeros(dims, spec.dtype)
        for _ in range(self.options.warmup_runs):
            self.run(feeds)

    def close(self) -> None:
        """Drop the session and its device buffers (ORT frees its memory when the last
        reference goes)."""
        self._graph_binding = None
        self._graph_inputs = {}
        self._graph_outputs = []
        self.session = None


def _torch_cast(tensor: Any, dtype: type[np.generic]) -> Any:
    """``tensor`` contiguous and of the torch dtype matching NumPy ``dtype``."""
    import torch

    wanted = torch.from_numpy(np.empty(0, dtype)).dtype
    return tensor.to(wanted).contiguous()
