"""The source face: read a photo, find its faces once per (file content, analyzer), cache
the analysis in memory and on disk.

The app creates one ``SourceFaceCache`` and passes it to every build, so a photo is
analysed once per analyzer model however often the stage is rebuilt (a preset or face
change) and across runs (``cache_dir``). On disk each entry is one small ``.npz`` holding
the faces (box, score, keypoints, landmarks, embedding), never the image: the image is
read from its file again. A corrupt or unreadable cache file is ignored and rewritten.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import cv2
import numpy as np

from livecam.errors import FaceSourceError, LivecamError
from livecam.face.source.face_sheet import write_face_sheet
from livecam.models.download import sha256_of as file_sha256
from livecam.types import Face, Frame
from livecam.userfiles import write_atomically
from livecam.userfiles.images import load_image_bgr

log = logging.getLogger(__name__)

NO_FACE_HINT = "use a frontal, well-lit photo where the face is at least ~80 px wide"
PICK_FACE_PANEL = "click the face to use under the photo in the Source tab"
SMALL_FACE_PX = 120  # a source face narrower than this is warned about
BLURRY_SHARPNESS = 7.0  # and one less sharp than this (``sharpness``)
CACHE_FORMAT = 1


class SourceAnalyzer(Protocol):
    """What the cache needs from an analyzer: faces with landmarks (and embeddings when it
    has a recognizer), largest first, and a ``model_id`` that changes whenever its results
    would."""

    model_id: str

    @property
    def embeds(self) -> bool: ...

    def analyze(self, frame: Frame, with_embedding: bool = False) -> list[Face]: ...


@dataclass(frozen=True)
class SourceFace:
    """The chosen face of a source image, analysed (landmarks filled, and the embedding
    when the analyzer had a recognizer)."""

    path: Path
    sha256: str
    image: Frame
    face: Face
    face_index: int
    faces_found: int


def describe_faces(faces: list[Face], limit: int = 6) -> str:
    """One line per face: index, box and size (the first ``limit`` faces, then a count)."""
    lines = [
        f"  {i}: box ({f.bbox[0]:.0f},{f.bbox[1]:.0f})-({f.bbox[2]:.0f},{f.bbox[3]:.0f}), "
        f"{f.width:.0f}x{f.height:.0f} px"
        for i, f in enumerate(faces[:limit])
    ]
    if len(faces) > limit:
        lines.append(f"  ... and {len(faces) - limit} more (indices {limit} to {len(faces) - 1})")
    return "\n".join(lines)


def _stack(values: list[np.ndarray | None], shape: tuple[int, ...]) -> np.ndarray:
    """Stack per-face arrays; all None (or no faces) gives an empty array of ``shape``."""
    if values and all(v is not None for v in values):
        return np.stack([np.asarray(v, np.float32) for v in values])
    return np.zeros((len(values), *shape), np.float32)


def faces_to_arrays(faces: list[Face]) -> dict[str, np.ndarray]:
    """The faces as the arrays of one cache file."""
    return {
        "boxes": np.array([f.bbox for f in faces], np.float32).reshape(-1, 4),
        "scores": np.array([f.score for f in faces], np.float32),
        "kps": np.array([f.kps for f in faces], np.float32).reshape(-1, 5, 2),
        "landmarks": _stack([f.landmarks for f in faces], (0, 2)),
        "embeddings": _stack([f.embedding for f in faces], (0,)),
    }


def faces_from_arrays(data: dict[str, np.ndarray]) -> list[Face]:
    """The faces of one cache file; ValueError when the arrays do not fit together."""
    boxes, scores, kps = data["boxes"], data["scores"], data["kps"]
    landmarks, embeddings = data["landmarks"], data["embeddings"]
    n = len(boxes)
    if (
        boxes.shape != (n, 4)
        or scores.shape != (n,)
        or kps.shape != (n, 5, 2)
        or landmarks.ndim != 3
        or len(landmarks) != n
        or embeddings.ndim != 2
        or len(embeddings) != n
    ):
        raise ValueError("inconsistent arrays")
    return [
        Face(
            bbox=boxes[i].astype(np.float32),
            score=float(scores[i]),
            kps=kps[i].astype(np.float32),
            landmarks=landmarks[i].astype(np.float32) if landmarks.shape[1] else None,
            embedding=embeddings[i].astype(np.float32) if embeddings.shape[1] else None,
        )
        for i in range(n)
    ]


class SourceFaceCache:
    """Analyses source images once per (image sha256, analyzer ``model_id``).

    Results are kept in memory (the ``max_entries`` most recent, with the decoded image)
    and, when ``cache_dir`` is given, on disk as one ``.npz`` per key. Thread-safe: one
    lock serialises every lookup and analysis (the loader thread and the main thread may
    both call it, and an analyzer's parts must not run on two threads at once).
    Created once by the app and passed to every build. ``analyses`` counts the photos
    this instance really analysed (misses in memory and on disk). With ``face_sheets``,
    a photo with several faces and no (or a wrong) face index also gets a numbered sheet
    of its faces written into the cache (``sheets`` in ``cache_dir``, else the temporary
    folder: never beside the user's photo; ``face_sheet.write_face_sheet``), named in the
    error.
    """

    def __init__(
        self, cache_dir: Path | None, max_entries: int = 8, *, face_sheets: bool = False
    ) -> None:
        self.cache_dir = cache_dir
        self.max_entries = max_entries
        self.face_sheets = face_sheets
        self.analyses = 0
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[str, str], tuple[Frame, list[Face]]] = OrderedDict()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def analyze_file(
        self, path: str | Path, analyzer: SourceAnalyzer
    ) -> tuple[str, Frame, list[Face]]:
        """(sha256, image, faces largest first) for an image file, analysed once."""
        p = Path(path)
        if not p.is_file():
            raise FaceSourceError(
                f"source face image {p} does not exist",
                "check the path given to --face",
                panel_hint="pick the face photo again in the Source tab (Open photo…)",
            )
        with self._lock:
            try:
                sha = file_sha256(p)
            except OSError as e:
                raise FaceSourceError(f"cannot read the source face image {p}: {e}") from e
            key = (sha, analyzer.model_id)
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                return sha, entry[0], entry[1]
            image = _read_image(p)
            faces = self._load(key)
            if faces is None:
                faces = analyzer.analyze(image, with_embedding=analyzer.embeds)
                self.analyses += 1
                log.info("source face %s: %d face(s) found", p, len(faces))
                self._save(key, faces)
            self._entries[key] = (image, faces)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
            return sha, image, faces

    def get(self, path: str | Path, face_index: int | None, analyzer: SourceAnalyzer) -> SourceFace:
        """The source face of ``path``; ``face_index`` picks one when the photo has several
        (indices go from the largest face down). Raises FaceSourceError otherwise."""
        p = Path(path)
        sha, image, faces = self.analyze_file(p, analyzer)
        n = len(faces)
        if n == 0:
            raise FaceSourceError(
                f"no face found in the source image {p} (0 faces found)", NO_FACE_HINT
            )
        if face_index is None:
            if n > 1:
                raise FaceSourceError(
                    f"{n} faces found in the source image {p}; choose one "
                    f"(indices from the largest face{self._sheet_note(p, sha, image, faces)}):\n"
                    f"{describe_faces(faces)}",
                    f"add --face-index N (0 to {n - 1}) to pick one face",
                    panel_hint=PICK_FACE_PANEL,
                )
            face_index = 0
        if not 0 <= face_index < n:
            raise FaceSourceError(
                f"--face-index {face_index} is out of range for {p}: {n} face(s) found "
                f"(valid indices 0 to {n - 1}"
                f"{self._sheet_note(p, sha, image, faces) if n > 1 else ''}):\n"
                f"{describe_faces(faces)}",
                f"use --face-index between 0 and {n - 1}",
                panel_hint=PICK_FACE_PANEL,
            )
        return SourceFace(
            path=p,
            sha256=sha,
            image=image,
            face=faces[face_index],
            face_index=face_index,
            faces_found=n,
        )

    def _sheet_note(self, photo: Path, sha: str, image: Frame, faces: list[Face]) -> str:
        """With ``face_sheets``: writes the numbered sheet of the photo's faces into the
        cache and says where (or that it could not)."""
        if not self.face_sheets:
            return ""
        folder = self.cache_dir / "sheets" if self.cache_dir is not None else None
        sheet = write_face_sheet(folder, photo, sha, image, faces)
        if sheet is None:
            return "; no numbered sheet of them could be written"
        return f"; they are numbered in {sheet}"

    def file_for(self, sha: str, model_id: str) -> Path | None:
        """Where the analysis of image ``sha`` by ``model_id`` is kept (None: memory only)."""
        if self.cache_dir is None:
            return None
        model = hashlib.sha256(model_id.encode()).hexdigest()[:16]
        return self.cache_dir / f"{sha}-{model}.npz"

    def _load(self, key: tuple[str, str]) -> list[Face] | None:
        path = self.file_for(*key)
        if path is None or not path.is_file():
            return None
        try:
            with np.load(path, allow_pickle=False) as data:
                if int(data["format"]) != CACHE_FORMAT or str(data["model_id"]) != key[1]:
                    raise ValueError("written by another version or model")
                return faces_from_arrays({k: data[k] for k in data.files})
        except Exception as e:  # any damage to a cache file: analyse again and rewrite
            log.warning("ignoring the unreadable face cache file %s (%s)", path, e)
            return None

    def _save(self, key: tuple[str, str], faces: list[Face]) -> None:
        path = self.file_for(*key)
        if path is None:
            return
        arrays: dict[str, Any] = {
            "format": np.array(CACHE_FORMAT),
            "model_id": np.array(key[1]),
            **faces_to_arrays(faces),
        }

        def save(tmp: Path) -> None:
            with open(tmp, "wb") as fh:
                np.savez(fh, **arrays)

        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, save)
        except OSError as e:
            log.warning("cannot write the face cache file %s (%s); keeping it in memory", path, e)


def sharpness(image: Frame, face: Face) -> float:
    """How sharp a face is, independent of its size and lighting: 100 x the variance of
    the Laplacian over the variance of the grey levels, on the inner face (the box of
    landmarks 17-67: brows to chin; the face box without landmarks) scaled to 128 px wide.

    Measured on the test portraits: sharp photos 9.5-45; the same blurred by 1 px at that
    scale 2.0-6.4, by a 9 px motion blur 1.5-8.1; a scanned 1927 group photo 0.5.
    """
    if face.landmarks is not None:
        lo, hi = face.landmarks[17:].min(axis=0), face.landmarks[17:].max(axis=0)
    else:
        lo, hi = face.bbox[:2], face.bbox[2:]
    h, w = image.shape[:2]
    x0, y0 = (max(int(v), 0) for v in lo)
    x1, y1 = min(int(hi[0]) + 1, w), min(int(hi[1]) + 1, h)
    if x1 - x0 < 4 or y1 - y0 < 4:
        return 0.0
    gray = cv2.cvtColor(image[y0:y1, x0:x1], cv2.COLOR_BGR2GRAY)
    scale = 128 / float(hi[0] - lo[0])
    method = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
    gray = cv2.resize(gray, None, fx=scale, fy=scale, interpolation=method)
    spread = float(gray.var())
    return 100 * float(cv2.Laplacian(gray, cv2.CV_64F).var()) / spread if spread > 0 else 0.0


def face_width(face: Face) -> float:
    """How wide a source face is for its warnings: ear to ear at eye level (the 68 points'
    jaw ends, 0 and 16) when it has 68 landmarks, else its box. The lite preset's boxes are
    1.3-1.5x that width on the test portraits (dlib's boxes, which ``SMALL_FACE_PX`` was
    set on, were about that width)."""
    lm = face.landmarks
    if lm is not None and len(lm) == 68:
        return float(np.linalg.norm(lm[16] - lm[0]))
    return face.width


def photo_warnings(source: SourceFace) -> list[str]:
    """Why the chosen source face will swap badly (empty when it is fine): too small, or
    blurry (the swapped face would be a smear either way)."""
    face = source.face
    where = f"the source face in {source.path}"
    width = face_width(face)
    if width < SMALL_FACE_PX:
        return [
            f"{where} is only {width:.0f} px wide: the swapped face will be a smear; "
            f"use a photo where the face is at least {SMALL_FACE_PX} px wide (a sharp "
            "head-and-shoulders photo, e.g. from a phone camera)"
        ]
    score = sharpness(source.image, face)
    if score < BLURRY_SHARPNESS:
        return [
            f"{where} looks blurry (sharpness {score:.1f}; sharp photos score "
            f"{BLURRY_SHARPNESS:g} and up): the swapped face will be a smear; use a sharp, "
            "well-focused, well-lit frontal photo"
        ]
    return []


def _read_image(path: Path) -> Frame:
    try:
        return load_image_bgr(path)
    except LivecamError as e:
        raise FaceSourceError(
            f"cannot read the source face image {path}: {e.message}",
            e.hint or "use a JPEG or PNG photo",
        ) from e
