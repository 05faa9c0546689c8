"""The naive loop the peers' tools run, with LiveCam's own parts: the baseline of
``livecam bench --compare naive`` and bench/bench_standard_pipeline.py.

One face of one frame at a time: the detector on every frame (no tracking), the
landmarker per face, the source photo analysed and its identity prepared again for every
face (no caching), one swapper call, one mask and one paste per face, and the NumPy path
of every part (each crop comes back to the host; no device-resident tensors).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from livecam.face.build import photo_analyzer
from livecam.face.parts import FaceParts
from livecam.face.source.photo import SourceFace
from livecam.types import FaceWork, Frame, FrameContext
from livecam.userfiles.images import load_image_bgr


@dataclass(frozen=True)
class NaiveResult:
    """What the naive loop did: frames, faces swapped and wall time."""

    frames: int
    faces_swapped: int
    seconds: float

    @property
    def ms_per_frame(self) -> float:
        return self.seconds * 1000 / max(self.frames, 1)

    @property
    def fps(self) -> float:
        return self.frames / self.seconds if self.seconds > 0 else 0.0

    @property
    def faces_per_s(self) -> float:
        return self.faces_swapped / self.seconds if self.seconds > 0 else 0.0


@contextlib.contextmanager
def host_path(parts: FaceParts) -> Iterator[None]:
    """Run the parts that have a torch compute path on their NumPy path meanwhile."""
    saved = []
    for part in (parts.swapper, parts.enhancer):
        compute = getattr(part, "compute", None)
        if part is not None and compute is not None:
            saved.append((part, compute))
            setattr(part, "compute", "numpy")  # noqa: B010 - not on the Part protocol
    try:
        yield
    finally:
        for part, compute in saved:
            setattr(part, "compute", compute)  # noqa: B010


def _analyse_source(parts: FaceParts, photo: Path, image: Frame) -> SourceFace:
    """The source photo's main face, analysed from scratch (what a naive loop does)."""
    analyzer = photo_analyzer(parts, identity=parts.swapper.needs_identity)
    found = analyzer.analyze(image, with_embedding=parts.swapper.needs_identity)
    if not found:
        raise ValueError(f"no face in the source photo {photo}")
    return SourceFace(photo, "", image, found[0], 0, len(found))


def naive_loop(
    parts: FaceParts,
    frames: Sequence[Frame],
    source_photo: Path,
    *,
    cached_source: bool = False,
) -> NaiveResult:
    """Swap ``source_photo``'s face onto every face of ``frames`` one face at a time (see
    the module doc). ``cached_source``: the source prepared once, so only the
    one-face-at-a-time and detect-every-frame costs remain. Frames are copied first."""
    photo = load_image_bgr(source_photo)
    once = parts.swapper.prepare(_analyse_source(parts, source_photo, photo))
    swapped = 0
    images = [f.copy() for f in frames]
    with host_path(parts):
        start = time.perf_counter()
        for seq, frame in enumerate(images):
            ctx = FrameContext(frame, seq)
            for face in parts.detector.detect([ctx])[0]:
                if face.score < parts.detector.start_score:
                    continue
                work = FaceWork(0, seq, face)
                if parts.landmarker is not None:
                    work = parts.landmarker.fit([ctx], [work])[0]
                source = (
                    once
                    if cached_source
                    else parts.swapper.prepare(_analyse_source(parts, source_photo, photo))
                )
                out, done = parts.render_faces([ctx], [work], [source])
                ctx = FrameContext(out[0], seq)
                swapped += len(done)
        seconds = time.perf_counter() - start
    return NaiveResult(len(images), swapped, seconds)
