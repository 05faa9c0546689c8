"""Locate and load the dlib models shipped by the ``face_recognition_models`` wheel.

The package itself is never imported (its ``__init__`` needs ``pkg_resources``); its
folder is found through the import system and the ``.dat`` files are read from there.
Loading a dlib model holds the GIL for up to half a second (every other thread, the
output thread too, stands still meanwhile), so the app loads each one once (``DlibModels``)
and every build of the face pipeline shares it, calls serialised by its lock.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import dlib

from livecam.errors import ModelError

PACKAGE = "face_recognition_models"
SHAPE_68 = "shape_predictor_68_face_landmarks.dat"
SHAPE_5 = "shape_predictor_5_face_landmarks.dat"
RESNET = "dlib_face_recognition_resnet_model_v1.dat"
T = TypeVar("T")
_FIX = "pip install face_recognition_models  (it ships the dlib .dat weights, no download needed)"


@dataclass(frozen=True)
class DlibModelFiles:
    """Paths of the dlib weights from ``face_recognition_models``."""

    shape_predictor_68: Path
    shape_predictor_5: Path
    face_recognition_resnet: Path


def models_dir() -> Path:
    """The ``models/`` folder of the installed ``face_recognition_models`` package."""
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise ModelError(f"Python package {PACKAGE!r} (dlib face weights) is not installed", _FIX)
    return Path(locations[0]) / "models"


def dlib_model_path(file_name: str) -> Path:
    """Path of one ``.dat`` file; ModelError naming the file when it is missing."""
    path = models_dir() / file_name
    if not path.is_file():
        raise ModelError(f"dlib model file {file_name} not found at {path}", _FIX)
    return path


def find_dlib_model_files() -> DlibModelFiles:
    """All three dlib weight files; ModelError naming the first missing one."""
    return DlibModelFiles(
        shape_predictor_68=dlib_model_path(SHAPE_68),
        shape_predictor_5=dlib_model_path(SHAPE_5),
        face_recognition_resnet=dlib_model_path(RESNET),
    )


def load_dlib_model(loader: Callable[[str], T], path: Path) -> T:
    """Load a dlib model (``dlib.shape_predictor``, ...) from ``path``; a corrupt or
    truncated file becomes a ModelError naming it, with the reinstall fix."""
    try:
        return loader(str(path))
    except RuntimeError as e:
        raise ModelError(
            f"dlib model file {path} is corrupt or unreadable: {e}",
            "pip install --force-reinstall face_recognition_models",
        ) from None


@dataclass(frozen=True)
class Shared(Generic[T]):
    """A loaded model and the lock every caller holds while using it (dlib detectors and
    networks keep per-call buffers, so two threads must not run one at the same time)."""

    model: T
    lock: threading.Lock = field(default_factory=threading.Lock)


class DlibModels:
    """Each dlib model loaded once, on first use, and shared by every build of the app's
    face pipeline (the live stage on the inference thread and the next build on the loader
    thread use the same objects, one call at a time). Created by the app; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded: dict[str, Shared[Any]] = {}

    def _get(self, key: str, load: Callable[[], T]) -> Shared[T]:
        with self._lock:
            shared = self._loaded.get(key)
            if shared is None:
                shared = self._loaded[key] = Shared(load())
            return shared

    def shape_predictor(self, file_name: str) -> Shared[dlib.shape_predictor]:
        """A shape predictor from the wheel (``SHAPE_68`` or ``SHAPE_5``)."""
        path = dlib_model_path(file_name)
        return self._get(file_name, lambda: load_dlib_model(dlib.shape_predictor, path))

    def resnet(self) -> Shared[dlib.face_recognition_model_v1]:
        """The 128-d ResNet face descriptor network."""
        path = dlib_model_path(RESNET)
        return self._get(RESNET, lambda: load_dlib_model(dlib.face_recognition_model_v1, path))
