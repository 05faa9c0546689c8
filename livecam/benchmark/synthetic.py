"""`livecam bench --synthetic narrow|full`: the standard preset with model files built
here (no download, no licence): the real SCRFD 2.5G detector, ``arcface_like`` (a 512-d
recognizer made from the real MobileFaceNet) and an inswapper-architecture swapper with
random weights (``narrow``: 3.8M parameters; ``full``: inswapper's 138.6M parameters and
349 GFLOPs per face). Speed figures only, never a quality figure. Files are built once
into a folder and reused."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import platformdirs

from livecam.benchmark.synthetic_models import FULL_WIDTH, arcface_like, inswapper_like
from livecam.models.store import ModelStore
from livecam.userfiles import write_atomically

log = logging.getLogger(__name__)

SyntheticSize = Literal["narrow", "full"]
WIDTHS: dict[str, int] = {"narrow": 128, "full": FULL_WIDTH}
DETECTOR = "scrfd-2.5g"
RECOGNIZER_BASE = "mobilefacenet"


def default_folder() -> Path:
    """Where the synthetic models are kept: the user cache folder's ``bench``."""
    return Path(platformdirs.user_cache_dir("livecam")) / "bench"


def _build_once(path: Path, build: Callable[[Path], object]) -> Path:
    """``path``, built by ``build(tmp)`` and renamed into place unless already there."""
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    log.info("building %s (once)", path)
    return write_atomically(path, build)


def require_present(store: ModelStore, names: Sequence[str]) -> None:
    """The store's ModelError naming the models of ``names`` not on this machine (a bench
    never downloads: `livecam models fetch` does)."""
    missing = [n for n in names if store.locate(n) is None]
    if missing:
        raise store.missing_error([(store.entry(n), "") for n in missing], tried=False)


def synthetic_models(
    size: SyntheticSize, fp16: bool, store: ModelStore, folder: Path | None = None
) -> dict[str, str]:
    """The ``swap.*_model`` fields of the synthetic standard preset: ``detector_model``,
    ``recognizer_model``, ``swapper_model``. The detector and MobileFaceNet come from
    ``store`` (a ModelError names the missing ones and the fix)."""
    folder = folder or default_folder()
    require_present(store, (DETECTOR, RECOGNIZER_BASE))
    detector, base = store.locate(DETECTOR), store.locate(RECOGNIZER_BASE)
    assert detector is not None and base is not None
    width = WIDTHS[size]
    swapper = folder / f"inswapper_like_w{width}{'_fp16' if fp16 else ''}.onnx"
    _build_once(swapper, lambda p: inswapper_like(p, width=width, fp16=fp16))
    recognizer = _build_once(folder / "arcface_like.onnx", lambda p: arcface_like(p, base))
    return {
        "detector_model": str(detector),
        "recognizer_model": str(recognizer),
        "swapper_model": str(swapper),
    }
