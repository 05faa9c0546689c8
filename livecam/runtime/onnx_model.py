"""One ONNX model in one ONNX Runtime session: its I/O contract, the provider really used
(and why not the one asked for), and batch-first runs.

``OnnxModel`` is what every ONNX part holds. Inputs are cast to the dtype the model
declares (an fp16 export takes float16), ``run_batch`` runs a batch in one call when the
model's batch axis is dynamic (or was rewritten to be, ``dynamic_batch=True``), else in
chunks of its fixed batch size. On CUDA, ``run`` goes through IO binding; ``run_bound``
keeps inputs and outputs on the device (OrtValues, or torch tensors via DLPack).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
import platformdirs

from livecam.config.schema import MemoryStrategy
from livecam.errors import ConfigError
from livecam.face.parts import Providers
from livecam.runtime import tensorrt
from livecam.runtime.cuda import (
    PinnedBuffers,
    StageStream,
    current_stream_event,
    synchronize_event,
)
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
#: warm-up runs that leave a CUDA graph captured: ORT captures it on the thread that runs
#: the session after one or two regular runs there (two in recent versions)
GRAPH_CAPTURE_RUNS = 3


@dataclass(frozen=True)
class MemoryLevel:
    """What one memory strategy (``swap.memory``) sets: ONNX Runtime's memory options and
    LiveCam's batch limit."""

    #: CUDA arena growth: ``kSameAsRequested`` (exactly what is asked) or ``kNextPowerOfTwo``
    arena_extend_strategy: str
    gpu_mem_limit_mb: int  # CUDA arena cap per session (``gpu_mem_limit``); 0: none
    cudnn_max_workspace: bool  # cuDNN may take its largest workspace (faster convolutions)
    cpu_arena: bool  # ORT's CPU memory arena (freed host memory kept for reuse)
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
#: cap, cuDNN's largest workspace, CPU arena), 4 faces per call. ``high``: as balanced with
#: 8 faces per call.
MEMORY: Mapping[str, MemoryLevel] = MappingProxyType(
    {
        "low": MemoryLevel("kSameAsRequested", 1536, False, False, 1),
        "balanced": MemoryLevel("kNextPowerOfTwo", 0, True, True, 4),
        "high": MemoryLevel("kNextPowerOfTwo", 0, True, True, 8),
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
    ``cpu_arena``: ORT's CPU memory arena. ``max_batch``: items per call of ``run_batch``
    on a dynamic batch axis (0: all at once). ``memory_options`` gives the last three for a
    memory strategy.
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
    cpu_arena: bool = True
    max_batch: int = 0
    spin_wait: bool = False

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

    def session_options(self) -> ort.SessionOptions:
        """ORT session options: thread counts, spin-waiting, graph optimisation level."""
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
        opts.enable_cpu_mem_arena = self.cpu_arena
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
        self.loaded_path = self.path
        if dynamic_batch:
            from livecam.runtime.batch_rewrite import make_dynamic_batch

            rewritten = make_dynamic_batch(self.path, opts.cache_root / "onnx", sha256=sha256)
            self.loaded_path = rewritten if rewritten is not None else self.path
        self.batch_rewritten = self.loaded_path != self.path
        wanted = wanted_provider(opts.provider)
        self.cuda_graph = (
            opts.cuda_graph and wanted == CUDA and _model_shapes_fixed(self.loaded_path)
        )
        if opts.cuda_graph and wanted == CUDA and not self.cuda_graph:
            log.info("%s: CUDA graph off (it needs fixed input/output shapes)", self.path.name)
        trt_key = None
        if wanted == TENSORRT and TENSORRT in available_providers():
            trt_key = tensorrt.EngineKey.for_model(
                self.loaded_path, opts.device_id, opts.tensorrt_fp16
            )
            engines = tensorrt.engine_cache_dir(opts.cache_root / "tensorrt", trt_key)
            engines.mkdir(parents=True, exist_ok=True)
        stream = compute_stream if wanted in _CUDA_DEVICE else None
        provider_opts = opts.provider_options_for(self.cuda_graph, stream, trt_key)
        building = (
            tensorrt.build_progress(engines, self.path.name)
            if trt_key is not None
            else contextlib.nullcontext()
        )
        with building:
            opened = open_session(
                self.loaded_path,
                opts.provider,
                opts.session_options(),
                options=provider_opts,
                announce=not self.cuda_graph,
            )
        if self.cuda_graph and opened.used != CUDA:
            # ORT refuses a CUDA graph when a compute node is not on the CUDA provider or
            # the model has control flow: then CUDA without the graph, not the CPU
            refused = opened.fallback_reason
            self.cuda_graph = False
            provider_opts = opts.provider_options_for(False, stream, trt_key)
            opened = open_session(
                self.loaded_path, opts.provider, opts.session_options(), options=provider_opts
            )
            if opened.used == CUDA:
                log.warning("%s: CUDA graph off, ORT refused it: %s", self.path.name, refused)
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
        #: the stream the session runs on (``user_compute_stream``), None: ORT's own
        self.compute_stream = stream if self.device == "cuda" else None
        #: reused pinned host buffers for NumPy feeds and outputs (pageable without CUDA)
        self.host_buffers = PinnedBuffers(enabled=self.device == "cuda")
        self.inputs = tuple(_spec(a) for a in self.session.get_inputs())
        self.outputs = tuple(_spec(a) for a in self.session.get_outputs())
        self._graph_binding: Any = None
        self._graph_inputs: dict[str, Any] = {}
        self._graph_outputs: list[Any] = []
        self._graph_lock = threading.Lock()  # one run at a time through the fixed buffers
        self._graph_thread: ThreadPoolExecutor | None = None

    @property
    def has_user_compute_stream(self) -> bool:
        """Whether the session runs on a stream LiveCam gave it (``compute_stream``)."""
        return self.compute_stream is not None

    def stage_stream(self) -> StageStream:
        """The session's stream as a ``StageStream`` (inactive without one): torch work
        entered in it is ordered with the session's runs without host synchronisation."""
        return StageStream(
            f"cuda:{self.options.device_id}",
            handle=self.compute_stream,
            enabled=self.compute_stream is not None,
        )

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
        if self.cuda_graph:
            return self._run_graph(feeds, None if keep_on_device else _to_numpy)
        binding = self.session.io_binding()
        keep: list[Any] = []  # the bound memory must outlive the run
        pinned = self.device == "cuda" and self.host_buffers.pinned
        with self._ordered(feeds) as stream:
            if self._bind_inputs(binding, feeds, keep, pinned) and not stream.active:
                self._wait_for_torch()  # ORT's own stream does not wait for torch's
            for spec in self.outputs:
                binding.bind_output(spec.name, self.device, self.options.device_id)
            self.session.run_with_iobinding(binding)
            outs = binding.get_outputs()
            if keep_on_device:
                return list(outs)
            if pinned:  # on the session's stream: another thread's downloads never wait
                import torch

                return [self.host_buffers.download(torch.from_dlpack(o)) for o in outs]
            return _to_numpy(outs)

    @contextlib.contextmanager
    def _ordered(self, feeds: Mapping[str, Any]) -> Iterator[StageStream]:
        """The session's stream (inactive without one), made torch's current stream on
        this thread; first, when a feed is a torch tensor, made to wait (on the device) for
        the caller's current stream, which wrote it."""
        stream = self.stage_stream()
        if any(_is_torch(v) for v in feeds.values()):
            stream.wait_current()
        with stream:
            yield stream

    def _wait_for_torch(self) -> None:
        """Block the host until torch's current stream on the session's GPU is done (that
        stream only): a session on ORT's own stream reads what torch wrote only then."""
        synchronize_event(current_stream_event(f"cuda:{self.options.device_id}"))

    def _bind_inputs(
        self, binding: Any, feeds: Mapping[str, Any], keep: list[Any], pinned: bool
    ) -> bool:
        """Bind ``feeds`` to ``binding`` (memory to keep alive appended to ``keep``); True
        when an input is GPU memory torch writes on its current stream (a CUDA tensor, or a
        NumPy input uploaded through a pinned buffer)."""
        types = {s.name: s.dtype for s in self.inputs}
        written = False
        for name, value in feeds.items():
            if isinstance(value, ort.OrtValue):
                binding.bind_ortvalue_input(name, value)
                continue
            if _is_torch(value):
                tensor = _torch_cast(value, types.get(name, np.float32))
                keep.append(tensor)
                binding.bind_ortvalue_input(name, ort.OrtValue.from_dlpack(tensor))
                written = written or tensor.device.type == "cuda"
                continue
            array = np.ascontiguousarray(np.asarray(value), dtype=types.get(name, np.float32))
            if self.device == "cpu":
                keep.append(array)
                binding.bind_cpu_input(name, array)
            elif pinned:
                tensor = self.host_buffers.upload(array, f"cuda:{self.options.device_id}")
                keep.append(tensor)
                binding.bind_ortvalue_input(name, ort.OrtValue.from_dlpack(tensor))
                written = True
            else:
                keep.append(array)
                binding.bind_ortvalue_input(
                    name,
                    ort.OrtValue.ortvalue_from_numpy(array, self.device, self.options.device_id),
                )
        return written

    def run_torch(self, feeds: Mapping[str, Any]) -> list[Any]:
        """``run_bound`` with the outputs as torch tensors on the session's device (sharing
        ORT's memory; copies when a CUDA graph reuses its buffers)."""
        import torch

        if self.cuda_graph:
            return self._run_graph(feeds, lambda outs: [torch.from_dlpack(o).clone() for o in outs])
        return [torch.from_dlpack(o) for o in self.run_bound(feeds, keep_on_device=True)]

    def _run_graph(
        self, feeds: Mapping[str, Any], take: Callable[[list[Any]], list[Any]] | None
    ) -> list[Any]:
        """A run through the fixed device buffers a CUDA graph was captured with, on the
        session's graph thread (ORT keeps a captured graph per thread). ``take`` turns the
        output buffers into what is returned while no other run can overwrite them (None:
        the buffers themselves). Inputs are copied into the bound buffers on the session's
        stream, so the replay reads them after the copies."""
        with self._graph_lock, self._ordered(feeds) as stream:
            runner = self._graph_runner()
            if self._fill_graph_inputs(feeds) and not stream.active:
                self._wait_for_torch()  # ORT's own stream does not wait for torch's
            runner.submit(self.session.run_with_iobinding, self._graph_binding).result()
            outs = list(self._graph_outputs)
            if take is None:
                return outs
            taken = take(outs)
            if not stream.active:
                self._wait_for_torch()  # copies out on torch's stream end before a replay
            return taken

    def _graph_runner(self) -> ThreadPoolExecutor:
        """The thread every run of the CUDA graph happens on, with the binding of fixed
        device buffers (both made on first use). One thread: ORT captures and replays the
        graph per thread, and ``warmup`` then captures it before the stream starts rather
        than on the pipeline's threads, where another thread's CUDA calls would break the
        capture (ORT captures in cudaStreamCaptureModeGlobal)."""
        if self._graph_thread is None:
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
            self._graph_thread = ThreadPoolExecutor(1, thread_name_prefix="livecam-cuda-graph")
        return self._graph_thread

    def _fill_graph_inputs(self, feeds: Mapping[str, Any]) -> bool:
        """Copy ``feeds`` into the graph's input buffers (same addresses every run); True
        when torch copied on its current stream (a NumPy feed is a synchronous ORT copy)."""
        types = {s.name: s.dtype for s in self.inputs}
        written = False
        for name, value in feeds.items():
            target = self._graph_inputs[name]
            if _is_torch(value) or isinstance(value, ort.OrtValue):
                import torch

                source = value if _is_torch(value) else torch.from_dlpack(value)
                torch.from_dlpack(target).copy_(source.reshape(target.shape()))
                written = True
            else:
                target.update_inplace(
                    np.ascontiguousarray(np.asarray(value), dtype=types.get(name, np.float32))
                )
        return written

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
        thread, self._graph_thread = self._graph_thread, None
        if thread is not None:
            thread.shutdown(wait=True)
        self._graph_binding = None
        self._graph_inputs = {}
        self._graph_outputs = []
        self.host_buffers.clear()
        self.session = None


def _to_numpy(outs: list[Any]) -> list[Any]:
    """OrtValues as NumPy arrays (a device-to-host copy each on CUDA)."""
    return [o.numpy() for o in outs]


def _torch_cast(tensor: Any, dtype: type[np.generic]) -> Any:
    """``tensor`` contiguous and of the torch dtype matching NumPy ``dtype``."""
    import torch

    wanted = torch.from_numpy(np.empty(0, dtype)).dtype
    return tensor.to(wanted).contiguous()
