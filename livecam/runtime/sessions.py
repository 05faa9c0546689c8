"""Opening one ONNX file as an ONNX Runtime session: how sessions are made
(``RuntimeOptions``, the memory strategies), the provider really used (and why not the one
asked for), the TensorRT engine cache, the verified dynamic-batch rewrite and whether a
CUDA graph can be captured. ``open_model_session`` does all of it once and returns an
``OpenedModel``; running it is ``livecam.runtime.onnx_model.OnnxModel``.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, Self

import numpy as np
import onnxruntime as ort
import platformdirs

from livecam.config.schema import MemoryStrategy
from livecam.config.swap import RuntimeSettings
from livecam.errors import ConfigError
from livecam.runtime import tensorrt
from livecam.runtime.providers import (
    CPU,
    CUDA,
    TENSORRT,
    ConvAlgoSearch,
    Prefer,
    Providers,
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
CUDA_DEVICE = (CUDA, TENSORRT)


@dataclass(frozen=True)
class MemoryLevel:
    """What one memory strategy (``swap.runtime.memory``) sets: ONNX Runtime's memory options and
    LiveCam's batch limit."""

    #: CUDA arena growth: ``kSameAsRequested`` (exactly what is asked) or ``kNextPowerOfTwo``
    arena_extend_strategy: str
    gpu_mem_limit_mb: int  # CUDA arena cap per session (``gpu_mem_limit``); 0: none
    cudnn_max_workspace: bool  # cuDNN may take its largest workspace (faster convolutions)
    #: ORT's CPU memory arena (freed host memory kept for reuse); None: only for sessions on
    #: a GPU provider (``RuntimeOptions.cpu_arena``)
    cpu_arena: bool | None
    batch_limit: int  # faces (and pixel-boost tiles) per model call

    def cuda_options(self) -> dict[str, str]:
        """The CUDA provider options of this level."""
        out = {
            "arena_extend_strategy": self.arena_extend_strategy,
            "cudnn_conv_use_max_workspace": "1" if self.cudnn_max_workspace else "0",
        }
        if self.gpu_mem_limit_mb:
            out["gpu_mem_limit"] = str(self.gpu_mem_limit_mb * 2**20)
        return out


#: ``low``: exact-size CUDA arena capped at 1.5 GB a session, cuDNN's small workspace, no
#: CPU arena, one face per call. ``balanced``: ORT's defaults (power-of-two arena growth, no
#: cap, cuDNN's largest workspace), the CPU arena only on a GPU, 4 faces per call. ``high``:
#: as balanced with 8 faces per call.
MEMORY: Mapping[str, MemoryLevel] = MappingProxyType(
    {
        "low": MemoryLevel("kSameAsRequested", 1536, False, False, 1),
        "balanced": MemoryLevel("kNextPowerOfTwo", 0, True, None, 4),
        "high": MemoryLevel("kNextPowerOfTwo", 0, True, None, 8),
    }
)


def memory_options(strategy: MemoryStrategy, batch: int = 0) -> dict[str, Any]:
    """``RuntimeOptions`` fields for memory ``strategy`` (see ``MEMORY``); ``batch`` > 0
    replaces its batch limit. A strategy that does not exist is a ConfigError."""
    level = MEMORY.get(strategy)
    if level is None:
        raise ConfigError(
            f"memory strategy {strategy!r} does not exist", f"use one of {', '.join(MEMORY)}"
        )
    return {
        "provider_options": {"cuda": level.cuda_options()},
        "cpu_arena": level.cpu_arena,
        "max_batch": batch or level.batch_limit,
    }


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
    ``cpu_arena``: ORT's CPU memory arena (None: only for a session on a GPU provider; a
    session on the CPU then allocates without it: the arena grows with each new batch
    shape and never gives back; without it a 20-minute live session with changes keeps its
    RSS within 1 %, at the same fps: bench/README.md). ``max_batch``: items per call of
    ``run_batch`` on a dynamic batch axis (0: all at once). ``memory_options`` gives the
    last three for a memory strategy.
    ``spin_wait``: ORT's intra-op threads busy-wait for work between ops. Off by default:
    a frame runs several models, each with its own thread pool, and the threads of the one
    that just ran spin on the cores the next one needs (`bench/bench_live_options.py` on 2
    cores: the standard pipeline live 2.2x the fps with it off at 480p, 1.25x at 720p with
    4 faces; the lite preset the same fps).
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
    cpu_arena: bool | None = None
    max_batch: int = 0
    spin_wait: bool = False

    @classmethod
    def from_section(cls, runtime: RuntimeSettings) -> Self:
        """The sessions' options as the config's ``[swap.runtime]`` section sets them (the
        memory strategy's arenas and batch limit, ``memory_options``); a new option of the
        sessions is read here."""
        return cls(
            provider=runtime.provider,
            device_id=runtime.gpu,
            threads=runtime.threads,
            spin_wait=runtime.spin_wait,
            cudnn_conv_algo_search=runtime.cudnn_conv_algo_search,
            **memory_options(runtime.memory, runtime.face_batch),
        )

    def __post_init__(self) -> None:
        for name in ("threads", "inter_threads", "device_id", "warmup_runs", "max_batch"):
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

    def session_options(self, on_cpu: bool = False) -> ort.SessionOptions:
        """ORT session options: thread counts, spin-waiting, graph optimisation level, the
        CPU arena (``cpu_arena``; None: off when ``on_cpu``, the session runs on the CPU)."""
        opts = ort.SessionOptions()
        opts.log_severity_level = 3  # ORT's notes on a file's layout are not the user's concern
        spin = "1" if self.spin_wait else "0"
        opts.add_session_config_entry("session.intra_op.allow_spinning", spin)
        opts.add_session_config_entry("session.inter_op.allow_spinning", spin)
        if self.threads > 0:
            opts.intra_op_num_threads = self.threads
        if self.inter_threads > 0:
            opts.inter_op_num_threads = self.inter_threads
        opts.graph_optimization_level = _GRAPH_LEVELS[self.graph_optimization]
        opts.enable_cpu_mem_arena = not on_cpu if self.cpu_arena is None else self.cpu_arena
        return opts

    def provider_options_for(
        self,
        cuda_graph: bool,
        compute_stream: int | None = None,
        trt_key: tensorrt.EngineKey | None = None,
    ) -> dict[str, dict[str, Any]]:
        """Provider options for ``provider_chain``: CUDA's (device, cuDNN search, CUDA graph
        when ``cuda_graph``, the user stream ``compute_stream``), TensorRT's (caches under
        ``cache_root``/tensorrt: with ``trt_key`` the engine in its own folder per model,
        GPU, ORT version and precision, the timing cache per GPU), then the extra
        ``provider_options`` over them."""
        trt_dir = self.cache_root / "tensorrt"
        engines, timing = trt_dir, trt_dir
        if trt_key is not None:
            engines = tensorrt.engine_cache_dir(trt_dir, trt_key)
            timing = tensorrt.timing_cache_dir(trt_dir, trt_key)
        cuda = cuda_options(self.device_id, self.cudnn_conv_algo_search, cuda_graph, compute_stream)
        trt = tensorrt_options(
            engines,
            self.device_id,
            self.tensorrt_fp16,
            timing_cache_dir=timing,
            compute_stream=compute_stream,
        )
        out: dict[str, dict[str, Any]] = {"cuda": dict(cuda), "tensorrt": dict(trt)}
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


def _model_shapes_fixed(path: Path) -> bool:
    """Whether every input and output of the ONNX file has a fixed shape."""
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    return all(
        all(d.HasField("dim_value") and d.dim_value > 0 for d in v.type.tensor_type.shape.dim)
        for v in [*graph.input, *graph.output]
    )


@dataclass(frozen=True)
class OpenedModel:
    """An ONNX file opened as a session: what was loaded (``loaded_path``: the verified
    dynamic-batch rewrite or the file itself), on which provider (``providers``: asked for
    and used; ``fallback_reason`` / ``fallback_fix`` when they differ), with which provider
    options (``provider_chain``), whether runs replay a CUDA graph, where IO binding puts
    tensors (``device``: "cuda" on CUDA/TensorRT, else "cpu"), the stream the session runs
    on (``compute_stream``, None: ORT's own) and its inputs and outputs."""

    session: ort.InferenceSession
    loaded_path: Path
    provider_chain: tuple[ProviderSpec, ...]
    providers: Providers
    fallback_reason: str | None
    fallback_fix: str | None
    cuda_graph: bool
    device: str
    compute_stream: int | None
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]


def open_model_session(
    path: Path,
    opts: RuntimeOptions,
    *,
    dynamic_batch: bool = False,
    compute_stream: int | None = None,
    sha256: str | None = None,
) -> OpenedModel:
    """Open ``path`` on the best provider for ``opts.provider`` (see ``OnnxModel``):
    rewritten to a dynamic batch axis first when ``dynamic_batch`` (verified, cached by
    ``sha256``), with a CUDA graph when asked for and the shapes are fixed (without one,
    on CUDA, when ORT refuses it), TensorRT engines in their own cache folder."""
    loaded_path = path
    if dynamic_batch:
        from livecam.runtime.batch_rewrite import make_dynamic_batch

        rewritten = make_dynamic_batch(path, opts.cache_root / "onnx", sha256=sha256)
        loaded_path = rewritten if rewritten is not None else path
    wanted = wanted_provider(opts.provider)
    cuda_graph = opts.cuda_graph and wanted == CUDA and _model_shapes_fixed(loaded_path)
    if opts.cuda_graph and wanted == CUDA and not cuda_graph:
        log.info("%s: CUDA graph off (it needs fixed input/output shapes)", path.name)
    trt_key = None
    if wanted == TENSORRT and TENSORRT in available_providers():
        trt_key = tensorrt.EngineKey.for_model(loaded_path, opts.device_id, opts.tensorrt_fp16)
        engines = tensorrt.engine_cache_dir(opts.cache_root / "tensorrt", trt_key)
        engines.mkdir(parents=True, exist_ok=True)
    stream = compute_stream if wanted in CUDA_DEVICE else None
    provider_opts = opts.provider_options_for(cuda_graph, stream, trt_key)
    building = (
        tensorrt.build_progress(engines, path.name)
        if trt_key is not None
        else contextlib.nullcontext()
    )
    with building:
        opened = open_session(
            loaded_path,
            opts.provider,
            opts.session_options(on_cpu=wanted == CPU),
            options=provider_opts,
            announce=not cuda_graph,
        )
    if cuda_graph and opened.used != CUDA:
        # ORT refuses a CUDA graph when a compute node is not on the CUDA provider or
        # the model has control flow: then CUDA without the graph, not the CPU
        refused = opened.fallback_reason
        cuda_graph = False
        provider_opts = opts.provider_options_for(False, stream, trt_key)
        opened = open_session(
            loaded_path,
            opts.provider,
            opts.session_options(on_cpu=wanted == CPU),
            options=provider_opts,
        )
        if opened.used == CUDA:
            log.warning("%s: CUDA graph off, ORT refused it: %s", path.name, refused)
    device = "cuda" if opened.used in CUDA_DEVICE else "cpu"
    return OpenedModel(
        session=opened.session,
        loaded_path=loaded_path,
        provider_chain=opened.chain,
        providers=Providers(
            requested=(short_name(opened.wanted),),
            used=(short_name(opened.used),),
            reason=opened.fallback_reason,
        ),
        fallback_reason=opened.fallback_reason,
        fallback_fix=opened.fix,
        cuda_graph=cuda_graph and opened.used == CUDA,
        device=device,
        compute_stream=stream if device == "cuda" else None,
        inputs=tuple(_spec(a) for a in opened.session.get_inputs()),
        outputs=tuple(_spec(a) for a in opened.session.get_outputs()),
    )
