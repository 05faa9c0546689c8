"""Locate the dlib model files shipped by the ``face_recognition_models`` wheel.

The package itself is never imported (its ``__init__`` needs ``pkg_resources``); its
folder is found through the import system and the ``.dat`` files are read from there.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

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
