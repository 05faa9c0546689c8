"""ONNX Runtime execution providers: the only module that knows provider names.

``provider_chain`` turns a user preference into the list handed to ORT,
``create_session`` builds a session and says loudly when the requested accelerator was
not the one actually used (ORT silently falls back to CPU), and ``probe_providers``
really runs a tiny model on every available provider for ``livecam doctor``.
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import onnxruntime as ort

from livecam.errors import ModelError

log = logging.getLogger(__name__)

Prefer = Literal["auto", "cuda", "tensorrt", "cpu"]
ProviderSpec = str | tuple[str, dict[str, Any]]

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
    "cuda": (CUDA, CPU),
    "tensorrt": (TENSORRT, CUDA, CPU),
    "cpu": (CPU,),
}
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


def fix_for(provider: str) -> str:
    """What to do when ``provider`` does not work."""
    if provider == CUDA:
        return CUDA_FIX
    if provider == TENSORRT:
        return f"{TENSORRT_FIX}; CUDA itself needs: {CUDA_FIX}"
    return "run `livecam doctor` to see which providers work"


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
) -> list[ProviderSpec]:
    """Providers to try for ``prefer``, best first, limited to those in ``available``.

    CPU always ends the chain. With ``trt_cache_dir``, TensorRT gets engine caching and
    fp16 options.
    """
    if prefer not in _CHAINS:
        raise ValueError(f"unknown provider preference {prefer!r}; use one of {list(_CHAINS)}")
    have = set(available_providers() if available is None else available) | {CPU}
    chain: list[ProviderSpec] = []
    for name in _CHAINS[prefer]:
        if name not in have:
            continue
        if name == TENSORRT and trt_cache_dir is not None:
            opts = {
                "trt_engine_cache_enable": True,
                "trt_engine_cache_path": str(trt_cache_dir),
                "trt_fp16_enable": True,
            }
            chain.append((name, opts))
        else:
            chain.append(name)
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


def _reason(provider: str, error: str | None = None) -> str:
    found = provider_library_error(provider) or error  # the missing library says it best
    return found.strip() if found else "ONNX Runtime did not enable it (see its log above)"


def create_session(
    path_or_bytes: str | os.PathLike[str] | bytes,
    prefer: Prefer,
    sess_options: ort.SessionOptions | None = None,
    trt_cache_dir: str | os.PathLike[str] | None = None,
) -> tuple[ort.InferenceSession, str]:
    """Create a session on the best provider for ``prefer``: (session, provider actually used).

    A provider that fails to create the session is skipped (its error kept for the
    warning) and the next one is tried. When the provider in use is not the one asked for
    (``auto``: the best accelerator in this build), a loud warning names the one requested,
    the one used and why. A model no provider can load raises ModelError.
    """
    model = path_or_bytes if isinstance(path_or_bytes, bytes) else os.fspath(path_or_bytes)
    what = "<model bytes>" if isinstance(model, bytes) else Path(model).name
    chain = provider_chain(prefer, trt_cache_dir=trt_cache_dir)
    # auto wants the best accelerator this build has (none: CPU, which is then no surprise)
    wanted = _name(chain[0]) if prefer == "auto" else _CHAINS[prefer][0]
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
    if used != wanted:
        reason = _reason(wanted, errors.get(wanted))
        log.warning(
            "%s: ONNX Runtime is running on %s, NOT %s as requested (prefer=%s): %s. "
            "Expect much lower speed. Fix: %s",
            what,
            short_name(used).upper(),
            short_name(wanted).upper(),
            prefer,
            reason,
            fix_for(wanted),
        )
    else:
        log.info("%s: running on %s", what, used)
    return session, used


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
