"""TensorRT engine caches: one folder per model, GPU, ONNX Runtime version and precision.

A TensorRT engine is only valid for the model it was built from, the GPU (name and compute
capability) and the TensorRT/ORT build, and fp16 engines differ from fp32 ones; building
one takes minutes. ``EngineKey`` names all of that and ``engine_cache_dir`` gives the
folder the TensorRT provider keeps its engine in (the timing cache, valid across models
on one GPU, is shared one level up). ``announce_build`` says so when no engine is cached
yet, and ``build_progress`` shows the build's elapsed time while the session is made, so
the first use does not look like a hang.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from tqdm import tqdm

from livecam.models.download import sha256_of

log = logging.getLogger(__name__)


def gpu_identity(device_id: int = 0) -> tuple[str, str]:
    """(GPU name, compute capability "9.0") of CUDA device ``device_id`` through torch, or
    ("unknown-gpu", "0.0") when torch or CUDA is missing (the key then still separates
    models, ORT versions and precisions)."""
    from livecam.runtime.cuda import cuda_available

    if not cuda_available():
        return "unknown-gpu", "0.0"
    import torch

    major, minor = torch.cuda.get_device_capability(device_id)
    return str(torch.cuda.get_device_name(device_id)), f"{major}.{minor}"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-").lower() or "x"


@dataclass(frozen=True)
class EngineKey:
    """What a TensorRT engine depends on."""

    model_sha256: str
    gpu_name: str
    compute_capability: str
    ort_version: str
    fp16: bool

    @classmethod
    def for_model(
        cls, path: str | os.PathLike[str], device_id: int = 0, fp16: bool = True
    ) -> EngineKey:
        """The key of ``path`` on GPU ``device_id`` with the installed ONNX Runtime."""
        import onnxruntime as ort

        name, capability = gpu_identity(device_id)
        return cls(sha256_of(path), name, capability, str(ort.__version__), fp16)

    @property
    def gpu_folder(self) -> str:
        """The GPU part of the path (timing caches are shared per GPU and ORT version)."""
        gpu, sm = _slug(self.gpu_name), _slug(self.compute_capability)
        return f"{gpu}-sm{sm}-ort{_slug(self.ort_version)}"

    @property
    def engine_folder(self) -> str:
        """The model and precision part of the path."""
        return f"{self.model_sha256[:16]}-{'fp16' if self.fp16 else 'fp32'}"


def timing_cache_dir(root: str | os.PathLike[str], key: EngineKey) -> Path:
    """The timing cache folder for ``key``'s GPU and ORT version under ``root``."""
    return Path(root) / key.gpu_folder


def engine_cache_dir(root: str | os.PathLike[str], key: EngineKey) -> Path:
    """The engine cache folder for ``key`` under ``root`` (not created)."""
    return timing_cache_dir(root, key) / key.engine_folder


def has_engine(folder: str | os.PathLike[str]) -> bool:
    """Whether the TensorRT provider has left an engine in ``folder``."""
    path = Path(folder)
    return path.is_dir() and any(path.glob("*.engine"))


def announce_build(folder: str | os.PathLike[str], model_name: str) -> bool:
    """Log that an engine is being built for ``model_name`` when ``folder`` has none yet;
    True when it did (the caller may then time the build)."""
    if has_engine(folder):
        return False
    log.warning(
        "building TensorRT engine for %s (minutes on first use; cached in %s)", model_name, folder
    )
    return True


@contextmanager
def build_progress(
    folder: str | os.PathLike[str], model_name: str, stream: IO[str] | None = None
) -> Iterator[None]:
    """Around the making of a TensorRT session: when ``folder`` has no engine yet, announce
    the build and keep a line on ``stream`` (stderr) with the time it has taken so far,
    redrawn every second, then log how long it took."""
    if not announce_build(folder, model_name):
        yield
        return
    bar = tqdm(
        desc=f"building TensorRT engine for {model_name}",
        bar_format="{desc}: {elapsed}",
        file=stream or sys.stderr,
        leave=True,
    )
    done = threading.Event()

    def tick() -> None:
        while not done.wait(1.0):
            bar.refresh()

    ticker = threading.Thread(target=tick, name="livecam-trt-build", daemon=True)
    t0 = time.monotonic()
    ticker.start()
    try:
        yield
    finally:
        done.set()
        ticker.join()
        bar.close()
        log.info("TensorRT engine for %s ready after %.0f s", model_name, time.monotonic() - t0)
