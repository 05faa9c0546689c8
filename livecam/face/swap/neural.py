"""The neural face swappers (inswapper_128, hyperswap 1a/1b/1c 256), ``Swapper`` parts.

The conventions are those of ``../shared/MODEL_CONTRACTS.md``. ``prepare`` turns the
source face's ArcFace embedding into the model's ``source`` vector: inswapper's latent
(``emb/|emb| @ emap``, renormalised as insightface does; ``emap`` is the ONNX file's last
initializer) or hyperswap's L2-normalised embedding. ``swap`` crops every face of every
frame by its 5 keypoints (similarity to the template at ``input_size * pixel_boost``),
splits each crop into its ``pixel_boost`` x ``pixel_boost`` interleaved sub-images, runs all
of them in one batched model call, and interleaves the outputs back. The paste-back mask is
the masker's job; ``swap`` leaves ``mask`` None.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Self

import numpy as np
import numpy.typing as npt
import onnx
from onnx import numpy_helper

from livecam.config.swap import NeuralSettings
from livecam.errors import ConfigError, ModelError
from livecam.face.crops import align
from livecam.face.crops.onnx_input import to_blob
from livecam.face.parts import Recognizer
from livecam.runtime import torch_path as device_path
from livecam.runtime.onnx_model import OnnxModel, TensorSpec
from livecam.runtime.torch_path import Compute
from livecam.types import Affine, Face, FaceWork, FrameContext, RunReport

if TYPE_CHECKING:
    from livecam.face.source.photo import SourceFace

log = logging.getLogger(__name__)

LatentMode = Literal["emap", "embedding"]
Latent = npt.NDArray[np.float32]
"""(512,) float32: the vector a swapper model takes as its ``source`` input."""

EMBEDDING_DIM = 512
MAX_PIXEL_BOOST = 8
NEUTRAL_WEIGHT = 0.5  # identity_weight that leaves the source vector unchanged


def identity_blend(weight: float) -> float:
    """FaceFusion's ``face_swapper_weight`` mapped to the target's share w' of the source
    vector: interp(weight, [0, 1], [0.35, -0.35]) (0.5 -> 0: no change)."""
    return float(np.interp(weight, [0.0, 1.0], [0.35, -0.35]))


def read_emap(model: OnnxModel) -> npt.NDArray[np.float32]:
    """inswapper's ``emap``: the last initializer of the model's ONNX file, (512, 512)."""
    try:
        proto = onnx.load(str(model.path), load_external_data=False)
    except Exception as e:  # any unreadable file: one line naming it
        raise ModelError(f"cannot read the initializers of {model.path}: {e}") from e
    if not proto.graph.initializer:
        raise ModelError(
            f"{model.path} has no initializers, so no emap",
            "use inswapper_128.onnx (or its fp16 export), whose last initializer is the emap",
        )
    emap = numpy_helper.to_array(proto.graph.initializer[-1]).astype(np.float32)
    if emap.shape != (EMBEDDING_DIM, EMBEDDING_DIM):
        raise ModelError(
            f"the last initializer of {model.path} has shape {emap.shape}, not the "
            f"{EMBEDDING_DIM}x{EMBEDDING_DIM} emap of inswapper",
            "this file is not an inswapper model: use the hyperswap settings or another file",
        )
    return emap


def _unit(v: npt.ArrayLike) -> npt.NDArray[np.float32]:
    a = np.asarray(v, np.float32).reshape(-1)
    n = float(np.linalg.norm(a))
    return a / np.float32(n) if n > 0 else a


def _find_input(model: OnnxModel, name: str, rank: int) -> TensorSpec:
    """The input called ``name``, else the only one of rank ``rank``."""
    for spec in model.inputs:
        if spec.name == name:
            return spec
    by_rank = [s for s in model.inputs if len(s.shape) == rank]
    if len(by_rank) == 1:
        return by_rank[0]
    raise ModelError(
        f"{model.path.name} has no '{name}' input (inputs: "
        f"{', '.join(model.input_names) or 'none'})",
        "use a swapper model with 'target' [N,3,S,S] and 'source' [N,512] inputs",
    )


def split_tiles(crops: npt.NDArray[np.uint8], k: int) -> npt.NDArray[np.uint8]:
    """(F, k*S, k*S, C) crops -> (F*k*k, S, S, C) sub-images, each taking every k-th pixel
    (FaceFusion's pixel boost: per crop ``reshape(S,k,S,k,C).transpose(1,3,0,2,4)``)."""
    f, size, _, c = crops.shape
    s = size // k
    tiles = crops.reshape(f, s, k, s, k, c).transpose(0, 2, 4, 1, 3, 5)
    return np.ascontiguousarray(tiles.reshape(f * k * k, s, s, c))


def join_tiles(tiles: npt.NDArray[np.uint8], k: int) -> npt.NDArray[np.uint8]:
    """The inverse of ``split_tiles``: (F*k*k, S, S, C) -> (F, k*S, k*S, C)."""
    n, s, _, c = tiles.shape
    f = n // (k * k)
    crops = tiles.reshape(f, k, k, s, s, c).transpose(0, 3, 1, 4, 2, 5)
    return np.ascontiguousarray(crops.reshape(f, s * k, s * k, c))


class NeuralSwapper:
    """A one-shot identity swapper on ONNX Runtime (inswapper or hyperswap contracts).

    ``latent``: "emap" (inswapper: the embedding through the file's emap) or "embedding"
    (hyperswap: the normalised embedding). ``input_size``, ``template``, ``mean``, ``std``
    (pixel = (x - mean) / std, per channel allowed) and ``color`` are the model's contract;
    the output is decoded as x * std + mean. ``pixel_boost`` k crops at k * input_size and
    swaps the k^2 sub-images. ``identity_weight`` (0..1, 0.5 = the source as is) blends
    the target face's normalised embedding into the source vector as FaceFusion does; a
    weight other than 0.5 reads ``face.embedding`` (512-d) of each target, computed with
    ``recognizer`` for faces that have none. ``compute``: "numpy" (the reference), "torch"
    (``device_path``: crops to decoded outputs on the model's device) or "auto" (torch when
    it is installed and the model runs on CUDA).

    ``latent``, ``input_size``, ``mean`` and ``std`` left None take the class's contract
    (``InSwapper``, ``HyperSwapper``); on this base class ``latent`` and ``input_size``
    must be given.
    """

    needs_identity = True
    LATENT: ClassVar[LatentMode | None] = None
    INPUT_SIZE: ClassVar[int | None] = None
    MEAN: ClassVar[float] = 0.0
    STD: ClassVar[float] = 255.0

    @classmethod
    def from_section(
        cls,
        session: Callable[[bool], OnnxModel],
        neural: NeuralSettings,
        recognizer: Recognizer | None,
        **contract: Any,
    ) -> Self:
        """The swapper as its config section (``[swap.neural]``) sets it, with its model's
        ``contract`` keywords: the session from ``session(cuda_graph)`` (a CUDA graph keeps
        the fixed shapes), the identity weight when ``recognizer`` gives 512-d embeddings
        (else the source as is). A new option of the neural swap is read here."""
        weighted = neural.identity_weight != NEUTRAL_WEIGHT and (
            recognizer is not None and recognizer.dim == EMBEDDING_DIM
        )
        return cls(
            session(neural.cuda_graph),
            pixel_boost=neural.pixel_boost,
            identity_weight=neural.identity_weight if weighted else NEUTRAL_WEIGHT,
            recognizer=recognizer if weighted else None,
            **contract,
        )

    def __init__(
        self,
        model: OnnxModel,
        *,
        latent: LatentMode | None = None,
        input_size: int | None = None,
        template: align.TemplateName = "arcface_128",
        mean: float | Sequence[float] | None = None,
        std: float | Sequence[float] | None = None,
        color: Literal["rgb", "bgr"] = "rgb",
        pixel_boost: int = 1,
        identity_weight: float = NEUTRAL_WEIGHT,
        recognizer: Recognizer | None = None,
        compute: Compute = "auto",
    ) -> None:
        latent = latent if latent is not None else self.LATENT
        input_size = input_size if input_size is not None else self.INPUT_SIZE
        if input_size is None or input_size < 1:
            raise ConfigError(
                f"the swapper needs its model's crop size, got input_size {input_size!r}",
                "set input_size (inswapper 128, hyperswap 256)",
            )
        if latent not in ("emap", "embedding"):
            raise ConfigError(
                f"unknown swapper latent mode {latent!r}", "use 'emap' or 'embedding'"
            )
        if not isinstance(pixel_boost, int) or not 1 <= pixel_boost <= MAX_PIXEL_BOOST:
            raise ConfigError(
                f"pixel boost must be a whole number from 1 to {MAX_PIXEL_BOOST}, "
                f"got {pixel_boost!r}",
                "use 1 (off), 2 or 4",
            )
        if not 0.0 <= identity_weight <= 1.0:
            raise ConfigError(
                f"identity weight must be between 0 and 1, got {identity_weight!r}",
                "use 0.5 for the source identity as is (lower keeps more of the target)",
            )
        if recognizer is not None and recognizer.dim != EMBEDDING_DIM:
            raise ConfigError(
                f"the swapper's identity weight needs {EMBEDDING_DIM}-d ArcFace embeddings, "
                f"but the recognizer {recognizer.model_id} gives {recognizer.dim}-d ones",
                "use the arcface-w600k-r50 recognizer",
            )
        self.model = model
        self.latent: LatentMode = latent
        self.input_size = input_size
        self.template: align.TemplateName = template
        self.mean = np.asarray(mean if mean is not None else self.MEAN, np.float32)
        self.std = np.asarray(std if std is not None else self.STD, np.float32)
        self.color = color
        self.pixel_boost = pixel_boost
        self.identity_weight = float(identity_weight)
        self.recognizer = recognizer
        self.providers = model.providers
        self._target = _find_input(model, "target", 4)
        self._source = _find_input(model, "source", 2)
        spatial = [d for d in self._target.shape[2:] if isinstance(d, int)]
        if spatial and spatial != [input_size] * len(spatial):
            raise ModelError(
                f"{model.path.name} takes {spatial[0]}x{spatial[-1]} crops, but the swapper "
                f"is set to input_size {input_size}",
                "set input_size to the model's crop size (inswapper 128, hyperswap 256)",
            )
        self._emap = read_emap(model) if latent == "emap" else None
        #: "torch": crops, model call and decoding on the model's device (device_path)
        self.compute = device_path.choose_compute(compute, model)
        self.model_id = (
            f"{model.model_id}:{latent}:{template}@{input_size}:boost{pixel_boost}"
            f":weight{self.identity_weight:g}"
        )

    @property
    def crop_size(self) -> int:
        """The side of the face crop in pixels (``input_size * pixel_boost``)."""
        return self.input_size * self.pixel_boost

    @property
    def input_names(self) -> tuple[str, str]:
        """The model's (target, source) input names."""
        return self._target.name, self._source.name

    def warmup(self) -> None:
        self.model.warmup()

    def close(self) -> None:
        self.model.close()

    def report_to(self, report: RunReport) -> None:
        """A local swapper reports nothing while it runs."""

    def prepare(self, source: SourceFace) -> Latent:
        """The model's source vector for an analysed source face (needs its 512-d
        ArcFace embedding)."""
        emb = source.face.embedding
        if emb is None or np.asarray(emb).size != EMBEDDING_DIM:
            got = "none" if emb is None else f"a {np.asarray(emb).size}-d one"
            raise ModelError(
                f"the source face in {source.path} needs a {EMBEDDING_DIM}-d ArcFace "
                f"embedding for {self.model.model_id} (it has {got})",
                "analyse the source photo with the arcface-w600k-r50 recognizer",
            )
        return self.latent_of(emb)

    def latent_of(self, embedding: npt.ArrayLike) -> Latent:
        """The source vector of a raw ArcFace embedding: ``e = emb/|emb|``; "emap":
        ``l = e @ emap``, ``l /= |l|`` (insightface); "embedding": ``e``."""
        e = _unit(embedding)
        if self._emap is None:
            return e
        return _unit(e @ self._emap)

    def swap(
        self,
        frames: Sequence[FrameContext],
        faces: Sequence[FaceWork],
        sources: Sequence[Latent],
    ) -> list[FaceWork]:
        """Fill ``affine`` (frame -> crop at ``crop_size``), ``crop`` and ``output`` (BGR
        uint8) of every record that can be swapped, all faces and pixel-boost tiles in
        one model call. Records without usable keypoints or whose crop lies outside
        their frame keep ``output`` None."""
        size = self.crop_size
        todo: list[tuple[FaceWork, Affine]] = []
        for work in faces:
            affine = self.face_affine(work.face, frames[work.frame_index].shape)
            if affine is not None:
                todo.append((work, affine))
        if not todo:
            return list(faces)
        vectors = self.source_vectors(frames, [w for w, _ in todo], sources)
        if self.compute == "torch":
            crops, outputs = device_path.swap_crops(
                self.model,
                frames,
                [w.frame_index for w, _ in todo],
                [a for _, a in todo],
                vectors,
                contract=device_path.Contract.of(
                    self._target.name, self.input_size, self.mean, self.std, self.color
                ),
                pixel_boost=self.pixel_boost,
                source=self._source.name,
            )
        else:
            crops = np.stack(
                [align.warp_crop(frames[w.frame_index].image, a, size) for w, a in todo]
            ).astype(np.uint8)
            outputs = self.run_crops(crops, vectors)
        for (work, affine), crop, out in zip(todo, crops, outputs, strict=True):
            work.affine = affine
            work.crop = crop
            work.output = out
        return list(faces)

    def run_crops(
        self, crops: npt.NDArray[np.uint8], vectors: npt.NDArray[np.float32]
    ) -> npt.NDArray[np.uint8]:
        """Swapped crops (F, crop_size, crop_size, 3) BGR uint8 for aligned BGR ``crops``
        of the same shape and one source vector per crop (F, 512): one model call. The
        output is decoded as x * std + mean, clipped to 0..255 and rounded to the nearest
        level (insightface truncates: up to one level darker)."""
        k = self.pixel_boost
        tiles = split_tiles(crops, k)
        feeds = {
            self._target.name: to_blob(tiles, self.mean, self.std, self.color),
            self._source.name: np.repeat(vectors.astype(np.float32), k * k, axis=0),
        }
        out = self.model.run_batch(feeds, [self._target.name, self._source.name])[0]
        pixels = np.asarray(out, np.float32).transpose(0, 2, 3, 1) * self.std + self.mean
        swapped = np.rint(np.clip(pixels, 0.0, 255.0)).astype(np.uint8)
        if self.color == "rgb":
            swapped = swapped[..., ::-1]
        return join_tiles(swapped, k)

    def face_affine(self, face: Face, frame_shape: tuple[int, ...]) -> Affine | None:
        """Frame -> crop affine for ``face``, or None when its keypoints are missing or
        degenerate or its crop does not overlap the frame."""
        kps = np.asarray(face.kps, np.float32)
        if kps.shape != (5, 2) or not np.isfinite(kps).all() or np.ptp(kps, axis=0).max() < 1:
            return None
        affine = align.align_affine(kps, self.template, self.crop_size)
        if not np.isfinite(affine).all():
            return None
        s = float(self.crop_size)
        square = np.array([[0, 0], [s, 0], [s, s], [0, s]], np.float32)
        corners = align.transform_points(square, align.invert(affine))
        h, w = frame_shape[:2]
        lo, hi = corners.min(axis=0), corners.max(axis=0)
        if hi[0] <= 0 or hi[1] <= 0 or lo[0] >= w or lo[1] >= h:
            return None
        return affine

    def source_vectors(
        self,
        frames: Sequence[FrameContext],
        works: Sequence[FaceWork],
        sources: Sequence[Latent],
    ) -> npt.NDArray[np.float32]:
        """(F, 512) source vectors the model gets for ``works``: each record's prepared
        source with the identity weight applied."""
        vectors = np.stack([np.asarray(sources[w.source_index], np.float32) for w in works])
        return self._balanced(frames, list(works), vectors)

    def _balanced(
        self,
        frames: Sequence[FrameContext],
        works: list[FaceWork],
        vectors: npt.NDArray[np.float32],
    ) -> npt.NDArray[np.float32]:
        """The source vectors with the identity weight applied (FaceFusion's
        ``balance_source_embedding``: src * (1 - w') + target_norm * w')."""
        share = identity_blend(self.identity_weight)
        if share == 0.0:
            return vectors
        targets = self._target_embeddings(frames, works)
        return (vectors * np.float32(1 - share) + targets * np.float32(share)).astype(np.float32)

    def _target_embeddings(
        self, frames: Sequence[FrameContext], works: list[FaceWork]
    ) -> npt.NDArray[np.float32]:
        """(F, 512) normalised embeddings of the target faces: ``face.embedding`` when it
        is 512-d, else the recognizer's (one call for all of them)."""
        found: list[npt.NDArray[np.float32] | None] = [
            _unit(w.face.embedding)
            if w.face.embedding is not None and np.asarray(w.face.embedding).size == EMBEDDING_DIM
            else None
            for w in works
        ]
        missing = [i for i, e in enumerate(found) if e is None]
        if missing:
            if self.recognizer is None:
                raise ModelError(
                    f"identity weight {self.identity_weight:g} needs each target face's "
                    f"{EMBEDDING_DIM}-d ArcFace embedding, and {len(missing)} face(s) have none",
                    "give the swapper the arcface-w600k-r50 recognizer, or set identity weight 0.5",
                )
            copies = [dataclasses.replace(works[i]) for i in missing]
            for i, done in zip(missing, self.recognizer.embed(frames, copies), strict=True):
                found[i] = _unit(np.asarray(done.face.embedding, np.float32))
        return np.stack([e for e in found if e is not None])


class InSwapper(NeuralSwapper):
    """inswapper_128 (and its fp16 export): 128 crops on the +8 px ArcFace template,
    RGB / 255 (mean 0, std 255), the emap latent, output in [0, 1]."""

    LATENT = "emap"
    INPUT_SIZE = 128
    MEAN = 0.0
    STD = 255.0


class HyperSwapper(NeuralSwapper):
    """hyperswap_1a/1b/1c_256: 256 crops on the same template scaled x2, RGB in [-1, 1]
    (mean 127.5, std 127.5), the normalised embedding as source (no emap), output 0 in
    [-1, 1]."""

    LATENT = "embedding"
    INPUT_SIZE = 256
    MEAN = 127.5
    STD = 127.5
