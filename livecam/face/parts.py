"""The face pipeline's parts: small batch-first protocols and the per-frame context they share.

Every part takes a list and returns a list of the same length, in the same order. A
``Detector`` takes frames; a ``Landmarker``, ``Recognizer``, ``Swapper``, ``Enhancer`` or
``Masker`` takes the batch's frames and a list of ``FaceWork`` records (each names its frame
by ``frame_index``) and returns those records with its fields filled; a ``Blender`` returns
one frame per frame. Parts never special-case each other: what they share about a frame is
on its ``FrameContext``.

A part that holds models loads them when it is built; ``warmup`` runs it once (first-call
latency) and ``close`` releases them. ``model_id`` names the model and its settings (the
source-face cache keys on it); ``providers`` says which compute provider was requested and
which one is really used. A part is used by one thread at a time (built and warmed on the
loader thread, then handed over to the inference thread).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import numpy as np
import numpy.typing as npt

from livecam.runtime.providers import Providers
from livecam.types import Face, FaceWork, Frame, FrameContext, RunReport

if TYPE_CHECKING:
    from livecam.face.source.photo import SourceFace

Box = npt.NDArray[np.float32]
"""(4,) float32 x1, y1, x2, y2 in frame pixels."""

Points = npt.NDArray[np.float32]
"""(N, 2) float32 x, y in frame pixels."""

SourceT = TypeVar("SourceT")


CPU_ONLY = Providers(requested=("cpu",), used=("cpu",))
"""For parts that run in NumPy or OpenCV on the CPU (no ONNX Runtime session)."""


class CpuPart:
    """Base of the parts that run on the CPU without an ONNX Runtime session and need no
    warm-up or release beyond what garbage collection does (OpenCV, NumPy)."""

    providers = CPU_ONLY

    def warmup(self) -> None:
        pass

    def close(self) -> None:
        pass


@runtime_checkable
class Part(Protocol):
    """What every part has: a model id, its providers, and a lifecycle."""

    model_id: str
    providers: Providers

    def warmup(self) -> None:
        """Run once so the first real call is not slow."""

    def close(self) -> None:
        """Release models and buffers."""


@runtime_checkable
class Detector(Part, Protocol):
    """Finds faces: per frame, faces with a box, a score and 5 keypoints (ArcFace order:
    eye on the image's left, eye on its right, nose tip, mouth corner left, right).

    ``start_score``: a detection scoring at least this is a face on its own (it starts a
    track, it is a face of a photo); a weaker one only confirms a face already tracked.
    """

    start_score: float

    def detect(self, frames: Sequence[FrameContext]) -> list[list[Face]]:
        """One list of faces per frame, in frame pixels, any order within a frame."""
        ...


@runtime_checkable
class Landmarker(Part, Protocol):
    """Fits landmarks to faces: each record's ``face`` gets ``landmarks`` (68 or 106
    points, or None for a keypoint-only model) and ``kps`` refined from them."""

    def fit(self, frames: Sequence[FrameContext], faces: Sequence[FaceWork]) -> list[FaceWork]:
        """The records with ``face`` replaced by the fitted face, same order."""
        ...


@runtime_checkable
class RefitLandmarker(Landmarker, Protocol):
    """A landmarker that can find its own points again in the next frame (the tracker
    refits it between detections)."""

    def box_for(self, landmarks: Points) -> Box:
        """The box this landmarker wants around a face with these landmarks."""
        ...

    def box_for_kps(self, kps: Points) -> Box:
        """The box it wants around a face with these 5 keypoints (where it starts on a face
        that a keypoint detector found)."""
        ...


@runtime_checkable
class Recognizer(Part, Protocol):
    """Identity embeddings: fills each record's ``face.embedding`` (L2-normalised float32,
    shape (dim,)); two faces closer than ``same_person_distance`` (Euclidean distance of
    the unit vectors) are the same person."""

    dim: int
    same_person_distance: float

    def embed(self, frames: Sequence[FrameContext], faces: Sequence[FaceWork]) -> list[FaceWork]:
        """The records with ``face`` replaced by a copy carrying its embedding."""
        ...


@runtime_checkable
class Swapper(Part, Protocol[SourceT]):
    """Puts the source identity onto target faces.

    ``prepare`` turns the analysed source face into whatever ``swap`` needs (a mesh and
    patch pyramid, an identity latent), once per source; ``needs_identity`` says whether it
    reads the source face's embedding (else the photo is analysed without a recognizer).
    ``swap`` gets the prepared sources and puts ``sources[work.source_index]`` onto each
    record's face, all records in one batch; it fills ``affine``, ``crop``, ``output`` and
    (when it makes its own) ``mask``. A record it cannot swap (no landmarks, face outside
    the frame) keeps ``output`` None. ``report_to`` says where to send what it sees while
    it runs (the remote swap's events and figures; a local swapper sends nothing).
    """

    needs_identity: bool

    def prepare(self, source: SourceFace) -> SourceT: ...

    def report_to(self, report: RunReport) -> None: ...

    def swap(
        self,
        frames: Sequence[FrameContext],
        faces: Sequence[FaceWork],
        sources: Sequence[SourceT],
    ) -> list[FaceWork]: ...


class SwapCache(Protocol):
    """A cache in front of the swapper (``face.track.repeat.SwapReuse``): ``swapper.swap`` for the
    faces it holds no fitting output for, the cached output for the others."""

    def swap(
        self,
        swapper: Swapper[Any],
        frames: Sequence[FrameContext],
        faces: Sequence[FaceWork],
        sources: Sequence[object],
    ) -> list[FaceWork]: ...


@runtime_checkable
class Enhancer(Part, Protocol):
    """Restores detail of swapped faces, on the frames after the swapped faces were pasted.

    ``enhance`` gets those frames and the swapped records and returns one new record per
    face it enhanced (same ``frame_index``, ``seq``, ``face`` and ``source_index``) with its
    own ``affine``, ``crop``, ``output`` and ``mask`` (the blend amount already in the
    mask); the blender pastes them like swapped faces.
    """

    def enhance(
        self, frames: Sequence[FrameContext], faces: Sequence[FaceWork]
    ) -> list[FaceWork]: ...


@runtime_checkable
class Masker(Part, Protocol):
    """Says where a swapped face replaces the frame: fills each record's ``mask``."""

    def mask(self, frames: Sequence[FrameContext], faces: Sequence[FaceWork]) -> list[FaceWork]: ...


@runtime_checkable
class Blender(Part, Protocol):
    """Pastes each record's ``output`` back into its frame through ``mask`` and the inverse
    of ``affine``. Returns one frame per frame: a new array where a face was pasted, the
    very same array where none was (records without ``output`` are skipped)."""

    def blend(self, frames: Sequence[FrameContext], faces: Sequence[FaceWork]) -> list[Frame]: ...


@dataclass(frozen=True)
class FaceParts:
    """The parts one preset is made of, built together (``build.build_parts``).

    ``photo_detector`` finds faces in source photos (slower, finer settings; it may
    share its model with ``detector``). ``landmarker`` is optional for presets whose
    detector's keypoints are enough; ``recognizer`` embeds source and reference faces;
    ``judge`` is the recognizer the swap check measures identity with (the bundled
    MobileFaceNet whatever the preset: ``build.JUDGE_MODEL``; None: the ``recognizer``).
    """

    preset: str
    detector: Detector
    photo_detector: Detector
    landmarker: RefitLandmarker | None
    recognizer: Recognizer
    swapper: Swapper[Any]
    enhancer: Enhancer | None
    masker: Masker | None
    blender: Blender
    judge: Recognizer | None = None

    @property
    def check_recognizer(self) -> Recognizer:
        """The recognizer the swap check judges with (``judge``, else ``recognizer``)."""
        return self.judge if self.judge is not None else self.recognizer

    def all(self) -> list[Part]:
        """Every distinct part, each once (a shared model is warmed and closed once)."""
        parts: list[Part] = []
        for part in (
            self.detector,
            self.photo_detector,
            self.landmarker,
            self.recognizer,
            self.swapper,
            self.enhancer,
            self.masker,
            self.blender,
            self.judge,
        ):
            if part is not None and all(part is not p for p in parts):
                parts.append(part)
        return parts

    def providers(self) -> Providers:
        """The providers of the parts together (each name once, in part order): what the
        stage asked for and what it really runs on. Parts that always run on the CPU
        (OpenCV, NumPy) count only when no part runs a model on a chosen provider."""
        parts = [p for p in self.all() if p.providers != CPU_ONLY] or self.all()
        return Providers(
            requested=tuple(dict.fromkeys(n for p in parts for n in p.providers.requested)),
            used=tuple(dict.fromkeys(n for p in parts for n in p.providers.used)),
            reason=next((p.providers.reason for p in parts if p.providers.reason), None),
        )

    def swap_faces(
        self,
        frames: Sequence[FrameContext],
        faces: Sequence[FaceWork],
        sources: Sequence[object],
        reuse: SwapCache | None = None,
    ) -> list[FaceWork]:
        """Swap and mask ``faces`` (of any frames of ``frames``; each gets
        ``sources[work.source_index]``), each part called once on the whole list: the
        records that got an ``output`` (the swapped faces). With ``reuse``, faces whose
        track's last swapped output still fits get it again instead of a swapper run."""
        if not faces:
            works: list[FaceWork] = []
        elif reuse is not None:
            works = reuse.swap(self.swapper, frames, faces, sources)
        else:
            works = self.swapper.swap(frames, faces, sources)
        done = [w for w in works if w.output is not None]
        if done and self.masker is not None:
            done = self.masker.mask(frames, done)
        return done

    def render_faces(
        self,
        frames: Sequence[FrameContext],
        faces: Sequence[FaceWork],
        sources: Sequence[object],
        reuse: SwapCache | None = None,
    ) -> tuple[list[Frame], list[FaceWork]]:
        """``swap_faces`` (with ``reuse``), paste them back, then enhance the pasted faces
        and paste those: one output frame per frame, in order (a frame without a swapped
        face is the very same array), and the swapped records."""
        done = self.swap_faces(frames, faces, sources, reuse)
        if not done:
            return [f.image for f in frames], done
        out = self.blender.blend(frames, done)
        if self.enhancer is not None:
            pasted = [
                frame if image is frame.image else FrameContext(image, frame.seq, frame.t_s)
                for frame, image in zip(frames, out, strict=True)
            ]
            enhanced = self.enhancer.enhance(pasted, done)
            if enhanced:
                out = self.blender.blend(pasted, enhanced)
        return out, done

    def render(
        self,
        frames: Sequence[FrameContext],
        faces: Sequence[FaceWork],
        sources: Sequence[object],
    ) -> list[Frame]:
        """``render_faces``' frames: one output frame per frame, in order."""
        return self.render_faces(frames, faces, sources)[0]

    def close(self) -> None:
        for part in self.all():
            part.close()
