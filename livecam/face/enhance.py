"""Face enhancer part: GFPGAN 1.4, CodeFormer and GPEN-BFR 256/512 on ONNX Runtime.

The enhancer runs on the frames after the swapped faces were pasted: it crops each face
again at the FFHQ template (``align.FFHQ_512``, scaled to the model's size), restores all
crops in one batched model call and returns records the blender pastes like swapped faces,
with the blend amount in their mask (FaceFusion: frame * (1 - b) + enhanced * b inside its
box mask). Conventions are those of ``../shared/MODEL_CONTRACTS.md``.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import Any, Self, get_args

import numpy as np
import numpy.typing as npt

from livecam.config.swap import NeuralSettings
from livecam.errors import ModelError
from livecam.face.crops import align
from livecam.face.crops.onnx_input import to_blob
from livecam.face.masks import box_mask
from livecam.runtime import torch_path as device_path
from livecam.runtime.onnx_model import OnnxModel, TensorSpec
from livecam.runtime.providers import Providers
from livecam.runtime.torch_path import Compute
from livecam.types import FaceWork, Frame, FrameContext, Mask

log = logging.getLogger(__name__)

#: a model call for ``FaceEnhancer.enhance_with``: the enhanced crops of the crops of faces
Restore = Callable[[Sequence[Frame], Sequence[FaceWork]], list[Frame]]
#: names of CodeFormer's fidelity-weight input in the published exports
WEIGHT_INPUTS = ("weight", "w")


def _image_input(model: OnnxModel) -> TensorSpec:
    """The model's image input: its first 4-D input (NCHW)."""
    for spec in model.inputs:
        if len(spec.shape) == 4:
            return spec
    raise ModelError(
        f"enhancer {model.model_id} has no NCHW image input "
        f"(inputs: {', '.join(s.name for s in model.inputs)})",
        "use a GFPGAN, CodeFormer or GPEN-BFR ONNX export",
    )


def _weight_input(model: OnnxModel, image: str) -> str | None:
    """The name of CodeFormer's fidelity input (``weight`` or ``w``), None when the model
    has no second input; ModelError for any other extra input."""
    others = [s.name for s in model.inputs if s.name != image]
    if not others:
        return None
    named = [n for n in others if n in WEIGHT_INPUTS]
    if len(others) == 1 and named:
        return named[0]
    raise ModelError(
        f"enhancer {model.model_id} has inputs {', '.join(others)} besides its image; "
        f"only a fidelity weight named {' or '.join(WEIGHT_INPUTS)} is understood",
        "use a GFPGAN, CodeFormer or GPEN-BFR ONNX export",
    )


class FaceEnhancer:
    """Restores each swapped face (``Enhancer`` protocol), all faces in one model call.

    Contract keywords (the manifest's ``[models.NAME.contract]``): ``input_size`` (512;
    GPEN-BFR-256: 256), ``template`` (``ffhq_512``, scaled to ``input_size``), ``mean`` and
    ``std`` (pixel = (x - mean) / std, per channel allowed), ``color`` (the model's channel
    order). Output in [-1, 1] -> (x + 1) / 2 * 255, rounded, uint8 BGR.
    ``blend`` 0..1: how much of the enhanced face replaces the frame (inside FaceFusion's
    box mask of ``mask_blur``); 0 enhances nothing. ``fidelity`` 0..1: CodeFormer's weight
    input (float64, shape (1,); ignored by models without it). ``every`` N: the model runs
    on every Nth appearance of a tracked face (``face.track_id``) and the last enhanced
    crop is pasted again, at the face's current place, in between; untracked faces run
    every frame. ``compute``: "numpy" (the reference), "torch" (``device_path``: crops to
    decoded outputs on the model's device) or "auto" (torch when it is installed and the
    model runs on CUDA).
    """

    @classmethod
    def from_section(cls, model: OnnxModel, neural: NeuralSettings, **contract: Any) -> Self:
        """The enhancer as its config section (``[swap.neural]``) sets it, with its
        model's ``contract`` keywords. A new option of the enhancer is read here."""
        return cls(
            model,
            blend=neural.enhance_blend,
            every=neural.enhance_every,
            fidelity=neural.codeformer_fidelity,
            **contract,
        )

    def __init__(
        self,
        model: OnnxModel,
        *,
        input_size: int = 512,
        template: align.TemplateName = "ffhq_512",
        mean: float | Sequence[float] = 127.5,
        std: float | Sequence[float] = 127.5,
        color: str = "rgb",
        blend: float = 0.8,
        every: int = 1,
        fidelity: float = 0.5,
        mask_blur: float = 0.3,
        compute: Compute = "auto",
    ) -> None:
        if not 0.0 <= blend <= 1.0:
            raise ValueError(f"enhancer blend must be within 0..1, got {blend}")
        if not 0.0 <= fidelity <= 1.0:
            raise ValueError(f"enhancer fidelity must be within 0..1, got {fidelity}")
        if int(every) != every or every < 1:
            raise ValueError(f"enhancer every must be a whole number >= 1, got {every}")
        if color not in ("rgb", "bgr"):
            raise ValueError(f"enhancer color must be 'rgb' or 'bgr', got {color!r}")
        if template not in get_args(align.TemplateName):
            raise ValueError(
                f"enhancer template must be one of {', '.join(get_args(align.TemplateName))}, "
                f"got {template!r}"
            )
        image = _image_input(model)
        spatial = image.shape[2:4]
        if any(isinstance(d, int) and d > 0 and d != input_size for d in spatial):
            raise ModelError(
                f"enhancer {model.model_id} takes {spatial[0]}x{spatial[1]} faces, "
                f"not {input_size}",
                f"set the enhancer's input_size to {spatial[0]}",
            )
        self.model = model
        self.providers: Providers = model.providers
        self.input_size = int(input_size)
        self.template: align.TemplateName = template
        self.mean = np.broadcast_to(np.asarray(mean, np.float32), (3,)).copy()
        self.std = np.broadcast_to(np.asarray(std, np.float32), (3,)).copy()
        self.color = color
        self.blend = float(blend)
        self.every = int(every)
        self.fidelity = float(fidelity)
        self.mask_blur = float(mask_blur)
        self._image = image.name
        self._weight = _weight_input(model, image.name)
        #: "torch": crops, model call and decoding on the model's device (device_path)
        self.compute = device_path.choose_compute(compute, model)
        weight = f":w{self.fidelity:g}" if self._weight else ""
        self.model_id = (
            f"{model.model_id}:{template}@{input_size}:blend{self.blend:g}"
            f":every{self.every}{weight}"
        )
        self._masks: dict[tuple[int, int], Mask] = {}
        self._last: dict[int, tuple[Frame, int]] = {}  # track id -> (enhanced crop, call)
        self._seen: dict[int, int] = {}  # track id -> appearances so far
        self._calls = 0

    @property
    def image_input(self) -> str:
        """The model's image input (NCHW)."""
        return self._image

    @property
    def weight_input(self) -> str | None:
        """CodeFormer's fidelity-weight input (None: the model has none)."""
        return self._weight

    def warmup(self) -> None:
        self.model.warmup()

    def close(self) -> None:
        self.model.close()

    def enhance(self, frames: Sequence[FrameContext], faces: Sequence[FaceWork]) -> list[FaceWork]:
        return self.enhance_with(frames, faces, None)

    def enhance_with(
        self,
        frames: Sequence[FrameContext],
        faces: Sequence[FaceWork],
        restore: Restore | None,
    ) -> list[FaceWork]:
        """``enhance`` with the model call done by ``restore(crops, faces)`` (the enhanced
        crops of those faces' crops; the remote enhancer's) instead of ``restore``
        (None: this part's own, on its compute path)."""
        self._calls += 1
        if self.blend == 0.0 or not faces:
            return []
        order = sorted(range(len(faces)), key=lambda i: faces[i].frame_index)
        affines = {i: self._affine(faces[i]) for i in order}
        run = self._plan([faces[i] for i in order])
        todo = [i for i, r in zip(order, run, strict=True) if r]
        if self.compute == "torch" and restore is None:
            extra = {self._weight: np.array([self.fidelity], np.float64)} if self._weight else {}
            cropped, enhanced_crops = device_path.enhance_crops(
                self.model,
                frames,
                [faces[i].frame_index for i in order],
                [affines[i] for i in order],
                run,
                contract=device_path.Contract.of(
                    self._image, self.input_size, self.mean, self.std, self.color
                ),
                extra=extra,
            )
            crops = dict(zip(order, cropped, strict=True))
        else:
            crops = {
                i: align.warp_crop(frames[faces[i].frame_index].image, affines[i], self.input_size)
                for i in order
            }
            todo_crops = [crops[i] for i in todo]
            enhanced_crops = (
                self.restore(todo_crops)
                if restore is None
                else restore(todo_crops, [faces[i] for i in todo])
            )
        restored = dict(zip(todo, enhanced_crops, strict=True))
        out: dict[int, FaceWork] = {}
        for i in order:
            tid = faces[i].face.track_id
            if i in restored:
                enhanced = restored[i]
                if tid >= 0:
                    self._last[tid] = (enhanced, self._calls)
            else:
                enhanced = self._last[tid][0]
                self._last[tid] = (enhanced, self._calls)
            out[i] = dataclasses.replace(
                faces[i],
                affine=affines[i],
                crop=crops[i],
                output=enhanced,
                mask=self._mask(enhanced.shape[0], enhanced.shape[1]),
            )
        self._forget()
        return [out[i] for i in range(len(faces))]

    def restore(self, crops: Sequence[Frame]) -> list[Frame]:
        """The enhanced crops (uint8 BGR) for ``crops`` (uint8 BGR, input_size square), in
        one model call (chunks of its batch size when that is fixed)."""
        if not crops:
            return []
        blob = to_blob(crops, self.mean, self.std, self.color)
        feeds: dict[str, npt.ArrayLike] = {self._image: blob}
        if self._weight is not None:
            feeds[self._weight] = np.array([self.fidelity], np.float64)
        result: npt.NDArray[Any] = self.model.run_batch(feeds, [self._image])[0]
        pixels = (np.clip(result.astype(np.float32), -1.0, 1.0) + 1.0) / 2.0 * 255.0
        images = np.round(pixels).astype(np.uint8).transpose(0, 2, 3, 1)
        if self.color == "rgb":
            images = images[..., ::-1]
        return [np.ascontiguousarray(image) for image in images]

    def _affine(self, work: FaceWork) -> npt.NDArray[np.float32]:
        return align.align_affine(work.face.kps, self.template, self.input_size)

    def _plan(self, faces: Sequence[FaceWork]) -> list[bool]:
        """Whether the model runs on each face (in frame order): every face when ``every``
        is 1 or it has no track, else on every ``every``-th appearance of its track (and
        whenever there is no earlier enhanced crop of it to paste again)."""
        run: list[bool] = []
        ready = set(self._last)
        for work in faces:
            tid = work.face.track_id
            if self.every == 1 or tid < 0:
                run.append(True)
                continue
            n = self._seen.get(tid, 0)
            self._seen[tid] = n + 1
            go = n % self.every == 0 or tid not in ready
            ready.add(tid)
            run.append(go)
        return run

    def _mask(self, h: int, w: int) -> Mask:
        """FaceFusion's box mask for an (h, w) enhanced crop, times ``blend`` (shared)."""
        if (h, w) not in self._masks:
            mask = box_mask((h, w), self.mask_blur, (0, 0, 0, 0)) * np.float32(self.blend)
            mask.flags.writeable = False
            self._masks[(h, w)] = mask
        return self._masks[(h, w)]

    def _forget(self) -> None:
        """Drop the crops of tracks not seen for more than ``every`` calls."""
        stale = [t for t, (_, call) in self._last.items() if self._calls - call > self.every]
        for tid in stale:
            del self._last[tid]
            self._seen.pop(tid, None)
