"""The torch compute path of the swapper and enhancer parts: tensors stay on the model's
device from the frame upload to the decoded output.

Each frame that has a face is uploaded once (frames of one size in one tensor), every crop
(all faces, all pixel-boost tiles) is warped, normalised and fed to the ONNX model on the
device (``OnnxModel.run_torch``: DLPack in, DLPack out, no host copy on CUDA), decoded
there, and the crops and outputs come back to the host in one download per batch (the
records keep NumPy uint8 BGR crops, which is the blender's contract). On CUDA the upload
and download go through the model's reused pinned buffers, and when the session was given
a stream (``OnnxModel.compute_stream``) the whole call runs on it: torch work and the ORT
run are ordered by the stream, with no host synchronisation before the run. The NumPy/OpenCV path
of the parts is the reference: same outputs within the warp's rounding
(``runtime.torch_ops``; tests/runtime/test_device_path.py states the tolerance).

Masks and paste-back stay on the host. A torch paste-back existed and was never wired:
every sink (virtual camera, preview, recorder) and the label take a host frame, so a
device paste would trade this one download of the finished crops (~100 KB for a 128 px
face) for a download of the whole frame (6 MB at 1080p) plus device versions of every mask
(box, ellipse, mouth, region) and of the colour transfer, while the host paste of one
face costs ~2.6 ms on 2 CPU cores (and the torch version on CPU tensors ~260 ms).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np
import numpy.typing as npt

from livecam.errors import ConfigError
from livecam.runtime import torch_ops as device
from livecam.runtime.cuda import PinnedBuffers
from livecam.runtime.onnx_model import OnnxModel
from livecam.types import Affine, FrameContext

log = logging.getLogger(__name__)

Compute = Literal["auto", "numpy", "torch"]
ComputePath = Literal["numpy", "torch"]
Tensor = device.Tensor


@dataclass(frozen=True)
class Contract:
    """A model's image input: its name, crop ``size`` (per tile), pixel = (x - mean) / std
    (per channel allowed, in the model's channel order) and whether it takes RGB."""

    image: str
    size: int
    mean: tuple[float, ...]
    std: tuple[float, ...]
    rgb: bool

    @classmethod
    def of(
        cls, image: str, size: int, mean: npt.ArrayLike, std: npt.ArrayLike, color: str
    ) -> Contract:
        """A contract with ``mean`` and ``std`` given as a number or per channel."""

        def per_channel(v: npt.ArrayLike) -> tuple[float, ...]:
            return tuple(float(x) for x in np.broadcast_to(np.asarray(v, np.float32), (3,)))

        return cls(image, size, per_channel(mean), per_channel(std), color == "rgb")


def resolve_compute(
    compute: str, model_device: str, has_torch: bool, torch_cuda: bool = False
) -> ComputePath:
    """The path a part takes: "auto" is torch when torch is installed with CUDA
    (``torch_cuda``) and the model runs on CUDA (``OnnxModel.device``), else numpy; "torch"
    needs torch (with CUDA for a CUDA session; on CPU it is plain torch, which is how it is
    tested); "numpy" always works."""
    if compute not in get_args(Compute):
        raise ConfigError(
            f"unknown compute path {compute!r}", f"use one of {', '.join(get_args(Compute))}"
        )
    on_cuda = model_device == "cuda"
    usable = has_torch and (torch_cuda or not on_cuda)
    if compute == "torch" and not usable:
        missing = "PyTorch with CUDA" if has_torch else "PyTorch, which is not installed"
        raise ConfigError(
            f"compute 'torch' on a {model_device} session needs {missing}",
            "install the CUDA build of torch (https://pytorch.org), or use compute 'auto' "
            "or 'numpy'",
        )
    if compute == "numpy":
        return "numpy"
    return "torch" if compute == "torch" or (usable and on_cuda) else "numpy"


def choose_compute(compute: str, model: OnnxModel) -> ComputePath:
    """``resolve_compute`` for ``model`` on this install."""
    has_torch = device.torch_available()
    torch_cuda = has_torch and model.device == "cuda" and _torch_cuda()
    return resolve_compute(compute, model.device, has_torch, torch_cuda)


def _torch_cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def torch_device(model: OnnxModel) -> str:
    """The torch device of ``model``'s tensors: ``cuda:<device_id>`` on CUDA, else cpu."""
    return f"cuda:{model.options.device_id}" if model.device == "cuda" else "cpu"


def warp_frame_crops(
    frames: Sequence[FrameContext],
    frame_index: Sequence[int],
    affines: Sequence[Affine],
    size: int,
    on: str,
    buffers: PinnedBuffers | None = None,
) -> Tensor:
    """(N, size, size, 3) float crops on device ``on``, rounded to whole levels as
    ``align.warp_crop`` gives them: crop i of ``frames[frame_index[i]]`` under
    ``affines[i]``. Each frame used is uploaded once, frames of one size together (through
    ``buffers``' reused pinned memory when given and on CUDA)."""
    torch = device.require_torch()
    crops = torch.empty((len(affines), size, size, 3), dtype=torch.float32, device=on)
    by_shape: dict[tuple[int, ...], list[int]] = {}
    for f in dict.fromkeys(frame_index):
        by_shape.setdefault(frames[f].shape, []).append(f)
    stacked = np.asarray(affines, np.float32).reshape(-1, 2, 3)
    for group in by_shape.values():
        local = {f: i for i, f in enumerate(group)}
        rows = [i for i, f in enumerate(frame_index) if f in local]
        images = (
            buffers.upload(np.stack([frames[f].image for f in group]), on)
            if buffers is not None and buffers.pinned
            else device.frames_to_tensor([frames[f].image for f in group], on)
        )
        warped = device.warp_crops(
            images, stacked[rows], size, [local[frame_index[i]] for i in rows]
        )
        crops[device.to_device(rows, on)] = warped
    return torch.round(crops.clamp(0.0, 255.0))


def run_batch(model: OnnxModel, feeds: Mapping[str, Any], batched: Sequence[str]) -> list[Any]:
    """``OnnxModel.run_batch`` for torch feeds, outputs as torch tensors on the model's
    device: one call when the batch axis is dynamic, else chunks of the fixed batch (the
    last padded by repeating its last item, the padding dropped from the outputs). Each
    run comes after the torch work that wrote its inputs (``OnnxModel.run_bound``), and
    its outputs are new tensors (a CUDA graph's are copied out), so no chunk is cloned."""
    torch = device.require_torch()
    n = len(feeds[batched[0]])
    step = model.fixed_batch
    if step is None or step == n:
        return model.run_torch(feeds)
    parts: list[list[Any]] = []
    for start in range(0, n, step):
        chunk = dict(feeds)
        for name in batched:
            piece = feeds[name][start : start + step]
            if len(piece) < step:
                piece = torch.cat([piece, piece[-1:].expand(step - len(piece), *piece.shape[1:])])
            chunk[name] = piece
        parts.append([o[: min(step, n - start)] for o in model.run_torch(chunk)])
    return [torch.cat(column) for column in zip(*parts, strict=True)]


def _download(model: OnnxModel, *tensors: Tensor) -> list[npt.NDArray[np.uint8]]:
    """Equally shaped uint8 tensors as NumPy arrays, in one device-to-host copy (into
    ``model``'s reused pinned buffer on CUDA)."""
    torch = device.require_torch()
    host = model.host_buffers.download(torch.stack([t.to(torch.uint8) for t in tensors]))
    return [np.ascontiguousarray(a) for a in host]


def swap_crops(
    model: OnnxModel,
    frames: Sequence[FrameContext],
    frame_index: Sequence[int],
    affines: Sequence[Affine],
    vectors: npt.NDArray[np.float32],
    *,
    contract: Contract,
    pixel_boost: int,
    source: str,
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint8]]:
    """(crops, outputs), each (F, k * size, k * size, 3) uint8 BGR (k = ``pixel_boost``):
    face i cropped from ``frames[frame_index[i]]`` by ``affines[i]`` and swapped with
    source vector ``vectors[i]`` (fed as ``source``), all faces and pixel-boost tiles in
    one model call on ``model``'s device: what ``align.warp_crop`` and
    ``NeuralSwapper.run_crops`` give."""
    device.require_torch()
    on, k, c = torch_device(model), pixel_boost, contract
    with model.stage_stream():
        crops = warp_frame_crops(frames, frame_index, affines, c.size * k, on, model.host_buffers)
        x = device.normalise(device.split_tiles(crops, k), c.mean, c.std, c.rgb)
        latents = device.to_device(np.asarray(vectors, np.float32), on)
        feeds = {c.image: x, source: latents.repeat_interleave(k * k, dim=0)}
        out = run_batch(model, feeds, [c.image, source])[0]
        swapped = device.join_tiles(device.denormalise(out, c.mean, c.std, c.rgb), k)
        host_crops, host_out = _download(model, crops, swapped)
    return host_crops, host_out


def enhance_crops(
    model: OnnxModel,
    frames: Sequence[FrameContext],
    frame_index: Sequence[int],
    affines: Sequence[Affine],
    run: Sequence[bool],
    *,
    contract: Contract,
    extra: Mapping[str, npt.ArrayLike] | None = None,
) -> tuple[npt.NDArray[np.uint8], list[npt.NDArray[np.uint8]]]:
    """(crops, restored): every face's ``contract.size`` crop (uint8 BGR) and the
    enhanced crops (output in [-1, 1]) of the faces whose ``run`` is set, in their order,
    in one model call on ``model``'s device (``extra``: inputs fed whole, e.g. CodeFormer's
    weight): what ``align.warp_crop`` and ``FaceEnhancer.restore`` give."""
    torch = device.require_torch()
    c = contract
    with model.stage_stream():
        on = torch_device(model)
        crops = warp_frame_crops(frames, frame_index, affines, c.size, on, model.host_buffers)
        todo = [i for i, go in enumerate(run) if go]
        if not todo:
            return _download(model, crops)[0], []
        picked = crops if len(todo) == len(crops) else crops[device.to_device(todo, on)]
        feeds: dict[str, Any] = {c.image: device.normalise(picked, c.mean, c.std, c.rgb)}
        feeds.update(extra or {})
        out = run_batch(model, feeds, [c.image])[0]
        restored = device.denormalise(out.clamp(-1.0, 1.0), 127.5, 127.5, c.rgb)
        host = model.host_buffers.download(torch.cat([crops.to(torch.uint8), restored]))
    n = len(crops)
    return np.ascontiguousarray(host[:n]), [np.ascontiguousarray(a) for a in host[n:]]
