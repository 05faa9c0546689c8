"""ONNX Runtime execution providers: the only module that knows provider names.

``provider_chain`` turns a user preference into the list handed to ORT (explicit order:
TensorRT, CUDA, DirectML, CoreML, CPU), ``cuda_options`` / ``tensorrt_options`` build the
provider option dicts, ``open_session`` builds a session and says loudly when the
requested accelerator was not the one actually used (ORT silently falls back to CPU), with
the likely cause as data, and ``probe_providers`` really runs a tiny model on every
available provider for ``livecam doctor``.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import io
import logging
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import onnxruntime as ort

from livecam.errors import ModelError
from livecam.runtime.cuda import nvidia_driver_present

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Providers:
    """Compute providers of a part: what was asked for and what is really used, and why
    not the one asked for (``reason``, e.g. the CUDA library that failed to load)."""

    requested: tuple[str, ...]
    used: tuple[str, ...]
    reason: str | None = None


Prefer = Literal["auto", "tensorrt", "cuda", "directml", "coreml", "cpu"]
ProviderSpec = str | tuple[str, dict[str, Any]]
#: cuDNN convolution algorithm search of the CUDA provider (EXHAUSTIVE is ORT's default:
#: best kernels, slower first run per input shape)
ConvAlgoSearch = Literal["EXHAUSTIVE", "HEURISTIC", "DEFAULT"]

CPU = "CPUExecutionProvider"
CUDA = "CUDAExecutionProvider"
TENSORRT = "TensorrtExecutionProvider"
DIRECTML = "DmlExecutionProvider"
COREML = "CoreMLExecutionProvider"

SHORT_NAMES = {
    CPU: "cpu",
    CUDA: "cuda",
    TENSORRT: "tensorrt",
    DIRECTML: "directml",
    COREML: "coreml",
}
_CHAINS: dict[str, tuple[str, ...]] = {
    # TensorRT builds engines for minutes on first use, so only when asked for.
    "auto": (CUDA, DIRECTML, COREML, CPU),
    "tensorrt": (TENSORRT, CUDA, CPU),
    "cuda": (CUDA, CPU),
    "directml": (DIRECTML, CPU),
    "coreml": (COREML, CPU),
    "cpu": (CPU,),
}
#: the values of ``--provider``
PREFERENCES: tuple[str, ...] = tuple(_CHAINS)
_LIBRARIES = {CUDA: "onnxruntime_providers_cuda", TENSORRT: "onnxruntime_providers_tensorrt"}
CUDA_FIX = (
    "install the CUDA and cuDNN versions this onnxruntime-gpu build needs "
    "(https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirements), "
    "e.g. `pip install onnxruntime-gpu[cuda,cudnn]`, and an NVIDIA driver that supports them"
)


TENSORRT_FIX = (
    "install the TensorRT libraries this onnxruntime-gpu build needs "
    "(https://onnxruntime.ai/docs/execution-providers/TensorRT-ExecutionProvider.html#requirements)"
    " or choose prefer='cuda'"
)


def quiet_onnxruntime_logs() -> None:
    """Keep ONNX Runtime's own log (its C++ errors while it tries a provider that cannot
    load) to fatal errors: LiveCam reports each fallback itself, with its cause and fix.
    For entry points only (it sets ORT's process-wide logger)."""
    ort.set_default_logger_severity(4)


def fix_for(provider: str) -> str:
    """What to do when ``provider`` does not work."""
    if provider == CUDA:
        return CUDA_FIX
    if provider == TENSORRT:
        return f"{TENSORRT_FIX}; CUDA itself needs: {CUDA_FIX}"
    if provider == DIRECTML:
        return "install onnxruntime-directml (Windows 10+, a DirectX 12 GPU) instead of onnxruntime"
    if provider == COREML:
        return "use the onnxruntime wheel for macOS, which includes CoreML"
    return "run `livecam doctor` to see which providers work"


def full_name(short: str) -> str:
    """``cuda`` -> ``CUDAExecutionProvider`` (the inverse of ``short_name``)."""
    for name, s in SHORT_NAMES.items():
        if s == short:
            return name
    return short


def _usable(available: list[str] | None, prefer: Prefer) -> set[str]:
    """The providers ``prefer`` may use: ``available`` as given, else this machine's ORT
    build, without CUDA for ``auto`` when no NVIDIA driver is installed (the GPU build of
    ORT on a machine without an NVIDIA GPU: the CPU is then no surprise, and trying CUDA
    would only print ORT's errors)."""
    if available is not None:
        return set(available)
    have = set(available_providers())
    if prefer == "auto" and not nvidia_driver_present():
        have.discard(CUDA)
    return have


def wanted_provider(prefer: Prefer, available: list[str] | None = None) -> str:
    """The concrete provider ``prefer`` asks for: the first of its chain, and for ``auto``
    the best accelerator this machine can run (CPU when there is none, no surprise)."""
    if prefer not in _CHAINS:
        raise ValueError(f"unknown provider preference {prefer!r}; use one of {list(_CHAINS)}")
    if prefer != "auto":
        return _CHAINS[prefer][0]
    have = _usable(available, prefer)
    return next((p for p in _CHAINS["auto"] if p in have), CPU)


def cuda_options(
    device_id: int = 0,
    conv_algo_search: ConvAlgoSearch = "EXHAUSTIVE",
    cuda_graph: bool = False,
    compute_stream: int | None = None,
) -> dict[str, str]:
    """CUDA provider options. ``cuda_graph`` captures the whole run as one CUDA graph: only
    valid for a model with fixed input shapes run through IO binding with the same device
    buffers every time (``OnnxModel`` guards both). ``compute_stream``: a ``cudaStream_t``
    as an int (``torch.cuda.Stream.cuda_stream``) the session runs its kernels on
    (``user_compute_stream``), so a stage's torch work and its ORT run share one stream."""
    if conv_algo_search not in ("EXHAUSTIVE", "HEURISTIC", "DEFAULT"):
        raise ValueError(
            f"cudnn_conv_algo_search {conv_algo_search!r}: use EXHAUSTIVE, HEURISTIC or DEFAULT"
        )
    out = {
        "device_id": str(device_id),
        "cudnn_conv_algo_search": conv_algo_search,
        "enable_cuda_graph": "1" if cuda_graph else "0",
    }
    return {**out, **stream_options(compute_stream)}


def stream_options(compute_stream: int | None) -> dict[str, str]:
    """The CUDA/TensorRT provider options that hand ORT the stream ``compute_stream`` (none
    for None)."""
    if compute_stream is None:
        return {}
    return {"has_user_compute_stream": "1", "user_compute_stream": str(int(compute_stream))}


def tensorrt_options(
    cache_dir: str | os.PathLike[str],
    device_id: int = 0,
    fp16: bool = True,
    *,
    timing_cache_dir: str | os.PathLike[str] | None = None,
    compute_stream: int | None = None,
) -> dict[str, str]:
    """TensorRT provider options: the engine cache in ``cache_dir`` (an engine is built
    once per model, shape and GPU, which takes minutes; ``tensorrt.engine_cache_dir`` gives
    a folder per model, GPU, ORT version and precision), the timing cache in
    ``timing_cache_dir`` (default: ``cache_dir``), fp16 kernels, ``compute_stream`` as for
    ``cuda_options``."""
    path = str(cache_dir)
    return {
        "device_id": str(device_id),
        "trt_engine_cache_enable": "True",
        "trt_engine_cache_path": path,
        "trt_timing_cache_enable": "True",
        "trt_timing_cache_path": str(timing_cache_dir) if timing_cache_dir is not None else path,
        "trt_fp16_enable": "True" if fp16 else "False",
        **stream_options(compute_stream),
    }


def short_name(provider: str) -> str:
    """``CUDAExecutionProvider`` -> ``cuda`` (for status lines)."""
    return SHORT_NAMES.get(provider, provider.removesuffix("ExecutionProvider").lower())


def available_providers() -> list[str]:
    """Providers compiled into the installed ONNX Runtime (not proof that they work)."""
    return list(ort.get_available_providers())


def provider_chain(
    prefer: Prefer,
    available: list[str] | None = None,
    trt_cache_dir: str | os.PathLike[str] | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[ProviderSpec]:
    """Providers to try for ``prefer``, best first, limited to those in ``available``
    (default: what this machine can use, ``_usable``).

    CPU always ends the chain. ``options`` maps a provider name (full or short) to its
    provider options; with ``trt_cache_dir``, TensorRT gets ``tensorrt_options`` (engine
    and timing caches there, fp16) unless ``options`` has its own.
    """
    if prefer not in _CHAINS:
        raise ValueError(f"unknown provider preference {prefer!r}; use one of {list(_CHAINS)}")
    have = _usable(available, prefer) | {CPU}
    given = {full_name(k): dict(v) for k, v in (options or {}).items()}
    if trt_cache_dir is not None and TENSORRT not in given:
        given[TENSORRT] = tensorrt_options(trt_cache_dir)
    chain: list[ProviderSpec] = []
    for name in _CHAINS[prefer]:
        if name in have:
            chain.append((name, given[name]) if given.get(name) else name)
    return chain


def _name(spec: ProviderSpec) -> str:
    return spec if isinstance(spec, str) else spec[0]


def provider_library_error(provider: str) -> str | None:
    """Why ORT cannot load ``provider``'s shared library (missing CUDA/cuDNN/TensorRT), or None."""
    lib = _LIBRARIES.get(provider)
    if lib is None:
        return None
    capi = Path(ort.__file__).parent / "capi"
    path = capi / (f"{lib}.dll" if sys.platform == "win32" else f"lib{lib}.so")
    if not path.exists():
        return f"{path.name} is not part of this ONNX Runtime build"
    try:
        ctypes.CDLL(str(path))
    except OSError as e:
        return str(e)
    return None


def load_cuda_libraries() -> str | None:
    """Why ORT's CUDA provider library cannot load (None: it loads), after letting ORT
    load the CUDA and cuDNN libraries of NVIDIA's pip packages when they are installed
    (``onnxruntime-gpu[cuda,cudnn]``, as ``CUDA_FIX`` suggests): the provider library has
    no search path to them, so on Linux it finds them only after
    ``onnxruntime.preload_dlls`` (ORT 1.21+) or an ``import torch`` built for the same
    CUDA major version. Does nothing when the library already loads."""
    error = provider_library_error(CUDA)
    preload = getattr(ort, "preload_dlls", None)
    if error is None or preload is None or importlib.util.find_spec("nvidia") is None:
        return error
    said = io.StringIO()
    try:
        with contextlib.redirect_stdout(said):  # it prints each library it cannot load
            preload()
    except Exception as e:  # a broken install must not stop the fallback to the CPU
        log.debug("onnxruntime.preload_dlls failed: %r", e)
    if said.getvalue().strip():
        log.debug("onnxruntime.preload_dlls: %s", said.getvalue().strip())
    return provider_library_error(CUDA)


def _reason(provider: str, error: str | None = None) -> str:
    found = provider_library_error(provider) or error  # the missing library says it best
    return found.strip() if found else "ONNX Runtime did not enable it (see its log above)"


@dataclass(frozen=True)
class OpenedSession:
    """A session and what it runs on: ``wanted`` (the concrete provider asked for),
    ``used`` (the provider really in use) and, when they differ, ``fallback_reason`` (the
    likely cause, e.g. the CUDA library that failed to load) and ``fix``; ``chain`` is
    what was handed to ORT (names and provider options)."""

    session: ort.InferenceSession
    wanted: str
    used: str
    chain: tuple[ProviderSpec, ...] = ()
    fallback_reason: str | None = None
    fix: str | None = None


def open_session(
    path_or_bytes: str | os.PathLike[str] | bytes,
    prefer: Prefer,
    sess_options: ort.SessionOptions | None = None,
    trt_cache_dir: str | os.PathLike[str] | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    announce: bool = True,
) -> OpenedSession:
    """Create a session on the best provider for ``prefer`` (``options``: provider options
    per provider, as for ``provider_chain``).

    A provider that fails to create the session is skipped (its error kept) and the next
    one is tried. When the provider in use is not the one asked for (``auto``: the best
    accelerator in this build), a loud warning names the one requested, the one used and
    why (unless ``announce`` is off: the caller retries with other options), and the
    result carries that reason. A model no provider can load raises ModelError.
    """
    model = path_or_bytes if isinstance(path_or_bytes, bytes) else os.fspath(path_or_bytes)
    what = "<model bytes>" if isinstance(model, bytes) else Path(model).name
    chain = provider_chain(prefer, trt_cache_dir=trt_cache_dir, options=options)
    wanted = wanted_provider(prefer)
    if wanted in (CUDA, TENSORRT):
        load_cuda_libraries()
    errors: dict[str, str] = {}
    if wanted not in {_name(s) for s in chain}:
        errors[wanted] = f"not in this ONNX Runtime build (available: {available_providers()})"
    session: ort.InferenceSession | None = None
    last_error: Exception | None = None
    for i in range(len(chain)):
        tried = chain[i:]
        try:
            session = ort.InferenceSession(model, sess_options, providers=tried, enable_fallback=0)
            break
        except Exception as e:  # ORT raises RuntimeError/Fail/InvalidArgument subclasses
            errors[_name(chain[i])] = str(e).strip().splitlines()[0] if str(e).strip() else repr(e)
            last_error = e
            if _name(chain[i]) == CPU:
                break
    if session is None:
        raise ModelError(
            f"ONNX Runtime could not load {what}: {last_error}",
            "the file is damaged or not an ONNX model: delete it and let LiveCam download it "
            "again (`livecam models`)",
        ) from last_error
    used = session.get_providers()[0]
    if used == wanted:
        log.info("%s: running on %s", what, used)
        return OpenedSession(session, wanted, used, tuple(chain))
    reason = _reason(wanted, errors.get(wanted))
    fix = fix_for(wanted)
    if not announce:
        return OpenedSession(session, wanted, used, tuple(chain), reason, fix)
    log.warning(
        "%s: ONNX Runtime is running on %s, NOT %s as requested (prefer=%s): %s. "
        "Expect much lower speed. Fix: %s",
        what,
        short_name(used).upper(),
        short_name(wanted).upper(),
        prefer,
        reason,
        fix,
    )
    return OpenedSession(session, wanted, used, tuple(chain), reason, fix)


def create_session(
    path_or_bytes: str | os.PathLike[str] | bytes,
    prefer: Prefer,
    sess_options: ort.SessionOptions | None = None,
    trt_cache_dir: str | os.PathLike[str] | None = None,
) -> tuple[ort.InferenceSession, str]:
    """``open_session`` as (session, provider actually used)."""
    opened = open_session(path_or_bytes, prefer, sess_options, trt_cache_dir)
    return opened.session, opened.used


@dataclass(frozen=True)
class ProviderProbe:
    """Whether one provider really runs a model: ``detail`` says how or why not."""

    name: str
    works: bool
    detail: str


def tiny_model_bytes() -> bytes:
    """A serialized ONNX model computing y = x + x on a float32 [1, 4] input."""
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Add", ["x", "x"], ["y"])], "probe", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8  # readable by every ORT LiveCam supports
    data: bytes = model.SerializeToString()
    return data


def probe_providers(providers: list[str] | None = None) -> list[ProviderProbe]:
    """Run a tiny model on each provider (default: every available one) and report.

    Never raises for a provider that fails: it is reported with the reason. ORT's own
    log is quietened to fatal-only while probing and set back to warnings afterwards.
    """
    import numpy as np

    names = available_providers() if providers is None else providers
    if CUDA in names or TENSORRT in names:
        load_cuda_libraries()
    model = tiny_model_bytes()
    x = np.arange(4, dtype=np.float32).reshape(1, 4)
    opts = ort.SessionOptions()
    opts.log_severity_level = 4
    results = []
    ort.set_default_logger_severity(4)
    try:
        for name in names:
            results.append(_probe_one(name, model, opts, x))
    finally:
        ort.set_default_logger_severity(2)
    return results


def _probe_one(name: str, model: bytes, opts: ort.SessionOptions, x: Any) -> ProviderProbe:
    if name not in available_providers():
        return ProviderProbe(
            name, False, f"not in this ONNX Runtime build (available: {available_providers()})"
        )
    try:
        session = ort.InferenceSession(model, opts, providers=[name], enable_fallback=0)
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else repr(e)
        return ProviderProbe(name, False, _reason(name, first))
    used = session.get_providers()
    if not used or used[0] != name:
        return ProviderProbe(
            name, False, f"fell back to {', '.join(used) or 'nothing'}: {_reason(name)}"
        )
    try:
        (y,) = session.run(None, {"x": x})
    except Exception as e:
        return ProviderProbe(name, False, f"session created but running failed: {e}")
    if not (y == x + x).all():
        return ProviderProbe(name, False, "ran but returned wrong numbers")
    return ProviderProbe(name, True, "runs a test model")
