"""The source face: read a photo once, find its face, cache the analysis by file content."""

from __future__ import annotations

import hashlib
import logging
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from livecam.errors import FaceSourceError, LivecamError
from livecam.pipeline.analysis import FaceAnalyzer, offline_analyzer
from livecam.sources.image import load_image_bgr
from livecam.types import Face, Frame

log = logging.getLogger(__name__)

NO_FACE_HINT = "use a frontal, well-lit photo where the face is at least ~80 px wide"


@dataclass(frozen=True)
class SourceFace:
    """The chosen face of a source image, analysed (landmarks and embedding filled)."""

    path: Path
    sha256: str
    image: Frame
    face: Face
    face_index: int
    faces_found: int


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def describe_faces(faces: list[Face]) -> str:
    """One line per face: index, box and size."""
    return "\n".join(
        f"  {i}: box ({f.bbox[0]:.0f},{f.bbox[1]:.0f})-({f.bbox[2]:.0f},{f.bbox[3]:.0f}), "
        f"{f.width:.0f}x{f.height:.0f} px"
        for i, f in enumerate(faces)
    )


class SourceFaceCache:
    """Analyses source images once; results are kept per file sha256 (most recent
    ``max_entries``). Built by the app and passed in; one instance per thread."""

    def __init__(self, analyzer: FaceAnalyzer | None = None, max_entries: int = 8) -> None:
        self.analyzer = (
            analyzer if analyzer is not None else offline_analyzer(max_side=1024, upsample=1)
        )
        if self.analyzer.encoder is None:
            raise ValueError("SourceFaceCache needs a FaceAnalyzer with an identity encoder")
        self.max_entries = max_entries
        self._entries: OrderedDict[str, tuple[Frame, list[Face]]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def analyze_file(self, path: str | Path) -> tuple[str, Frame, list[Face]]:
        """(sha256, image, faces largest first) for an image file, cached by content."""
        p = Path(path)
        if not p.is_file():
            raise FaceSourceError(
                f"source face image {p} does not exist", "check the path given to --face"
            )
        try:
            sha = file_sha256(p)
        except OSError as e:
            raise FaceSourceError(f"cannot read the source face image {p}: {e}") from e
        entry = self._entries.get(sha)
        if entry is None:
            try:
                image = load_image_bgr(p)
            except LivecamError as e:
                raise FaceSourceError(
                    f"cannot read the source face image {p}: {e.message}",
                    e.hint or "use a JPEG or PNG photo",
                ) from e
            faces = self.analyzer.analyze(image, with_embedding=True)
            log.info("source face %s: %d face(s) found", p, len(faces))
            entry = (image, faces)
            self._entries[sha] = entry
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        else:
            self._entries.move_to_end(sha)
        return sha, entry[0], entry[1]

    def get(self, path: str | Path, face_index: int | None = None) -> SourceFace:
        """The source face of ``path``; ``face_index`` picks one when the photo has several
        (indices go from the largest face down). Raises FaceSourceError otherwise."""
        p = Path(path)
        sha, image, faces = self.analyze_file(p)
        n = len(faces)
        if n == 0:
            raise FaceSourceError(
                f"no face found in the source image {p} (0 faces found)", NO_FACE_HINT
            )
        if face_index is None:
            if n > 1:
                raise FaceSourceError(
                    f"{n} faces found in the source image {p}; choose one "
                    f"(indices from the largest face):\n{describe_faces(faces)}",
                    f"add --face-index N (0 to {n - 1}) to pick one face",
                )
            face_index = 0
        if not 0 <= face_index < n:
            raise FaceSourceError(
                f"--face-index {face_index} is out of range for {p}: {n} face(s) found "
                f"(valid indices 0 to {n - 1}):\n{describe_faces(faces)}",
                f"use --face-index between 0 and {n - 1}",
            )
        return SourceFace(
            path=p,
            sha256=sha,
            image=image,
            face=faces[face_index],
            face_index=face_index,
            faces_found=n,
        )
