"""Device-resident crops and normalisation with torch (guarded when absent).

The NumPy/OpenCV path (``face.crops.align.warp_crop``, the parts' normalisation) is the
reference; these do the same on torch tensors so that on CUDA a swapper's or enhancer's
crops are cut, normalised, run and decoded on the GPU (``runtime.torch_path``), and only
the finished crops come back to the host, where masks and paste-back run (a device
paste-back was dropped: see the note in ``runtime.torch_path``). Pixel-centre convention:
``cv2.warpAffine`` maps destination pixel (x, y) (centres at integers) through the inverse
affine to source coordinates; ``grid_sample(align_corners=False)`` puts source pixel i's
centre at normalised ``(2 i + 1) / W - 1``, which the grids here use. OpenCV quantises
sampling positions to 1/32 px and bilinear weights to 1/1024, so results differ from it
by rounding (tests: mean < 0.5 grey levels, max < 2 on real faces).
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from livecam.errors import LivecamError

log = logging.getLogger(__name__)

Padding = Literal["zeros", "border"]
Tensor = Any  # torch.Tensor; torch is optional


def torch_available() -> bool:
    """Whether torch is installed (the device path needs it; the NumPy path does not)."""
    return importlib.util.find_spec("torch") is not None


def require_torch() -> Any:
    """The torch module, or a LivecamError saying how to install it."""
    if not torch_available():
        raise LivecamError(
            "the GPU pipeline path needs PyTorch, which is not installed",
            "install it with `pip install torch` (CUDA build from https://pytorch.org), or run "
            "on the NumPy path",
        )
    import torch

    return torch


def frames_to_tensor(frames: Sequence[npt.NDArray[np.uint8]], device: str = "cpu") -> Tensor:
    """(B, H, W, 3) uint8 tensor of equally sized frames on ``device`` (one upload, from
    pinned memory when the device is CUDA)."""
    torch = require_torch()
    stacked = torch.from_numpy(np.ascontiguousarray(np.stack(frames)))
    if str(device).startswith("cuda"):
        return stacked.pin_memory().to(device, non_blocking=True)
    return stacked.to(device)


def to_device(values: npt.ArrayLike | Tensor, device: Any, dtype: Any = None) -> Tensor:
    """``values`` (NumPy-like or a tensor) as a tensor on ``device`` (``dtype``: a torch
    dtype, default kept). From the host to CUDA the copy is made from pinned memory without
    blocking: a copy from pageable memory makes the host wait for the whole stream."""
    torch = require_torch()
    host = values if isinstance(values, torch.Tensor) else torch.as_tensor(np.asarray(values))
    if dtype is not None:
        host = host.to(dtype)
    if host.device.type != "cpu" or torch.device(device).type != "cuda":
        return host.to(device)
    return host.pin_memory().to(device, non_blocking=True)


def _host_inverses(affines: npt.ArrayLike | Tensor) -> npt.NDArray[np.float64]:
    """Inverses of (N, 2, 3) affines, on the host (float64). Not ``torch.linalg.inv`` on
    the device: that synchronises the device with the CPU (its documented error check)."""
    torch = require_torch()
    a = affines.detach().cpu().numpy() if isinstance(affines, torch.Tensor) else affines
    forward = np.asarray(a, np.float64).reshape(-1, 2, 3)
    full = np.zeros((len(forward), 3, 3))
    full[:, :2], full[:, 2, 2] = forward, 1
    return np.asarray(np.linalg.inv(full)[:, :2], np.float64)


def _points(inverse: Tensor, out_size: tuple[int, int]) -> Tensor:
    """(N, h, w, 2) input pixel coordinates (float32) that ``inverse`` (output pixel ->
    input pixel) maps the ``out_size`` (w, h) output pixels to."""
    torch = require_torch()
    w, h = out_size
    ys, xs = torch.meshgrid(
        torch.arange(h, dtype=torch.float32, device=inverse.device),
        torch.arange(w, dtype=torch.float32, device=inverse.device),
        indexing="ij",
    )
    base = torch.stack([xs, ys, torch.ones_like(xs)], dim=-1)  # (h, w, 3)
    return torch.einsum("hwk,njk->nhwj", base, inverse.to(torch.float32))


def _corners(inverse: npt.NDArray[np.float64], out_size: tuple[int, int]) -> npt.NDArray[Any]:
    """(N, 4, 2) input pixel coordinates (on the host) that (N, 2, 3) ``inverse`` (output
    pixel -> input pixel) maps the corner pixels of the ``out_size`` (w, h) output to."""
    w, h = out_size
    corners = np.array([[0, 0, 1], [w - 1, 0, 1], [0, h - 1, 1], [w - 1, h - 1, 1]], np.float64)
    out: npt.NDArray[Any] = np.einsum("ck,njk->ncj", corners, inverse)
    return out


def _normalised(
    points: Tensor, in_size: tuple[int, int], origin: tuple[int, int] = (0, 0)
) -> Tensor:
    """grid_sample coordinates of input pixel ``points`` in a (W, H) = ``in_size`` image
    whose pixel (0, 0) is input pixel ``origin`` (align_corners=False: pixel i's centre is
    at (2 i + 1) / W - 1). Plain numbers, no host data copied to the device."""
    torch = require_torch()
    axes = [(2 * (points[..., k] - origin[k]) + 1) / in_size[k] - 1 for k in range(2)]
    return torch.stack(axes, dim=-1)


def _sample(images: Tensor, grid: Tensor, padding: Padding, dtype: Any) -> Tensor:
    """(N, h, w, C) bilinear samples of (N, H, W, C) ``images`` at ``grid``."""
    torch = require_torch()
    x = images.permute(0, 3, 1, 2).to(dtype)
    out = torch.nn.functional.grid_sample(
        x, grid.to(dtype), mode="bilinear", padding_mode=padding, align_corners=False
    )
    return out.permute(0, 2, 3, 1)


def warp_crops(
    frames: Tensor,
    affines: npt.ArrayLike | Tensor,
    size: int | tuple[int, int],
    frame_index: Sequence[int] | None = None,
    *,
    padding: Padding = "zeros",
    half: bool = False,
) -> Tensor:
    """(N, h, w, C) float crops (0..255, not rounded) of (B, H, W, C) ``frames``: crop i is
    frame ``frame_index[i]`` (default: i, or 0 for a single frame) warped by ``affines[i]``
    (frame -> crop, as for ``cv2.warpAffine``) to ``size`` (int or (w, h)); bilinear,
    ``padding`` "zeros" = ``BORDER_CONSTANT`` 0, "border" = ``BORDER_REPLICATE``.
    ``half``: float16 crops (sampled in float32: float16 sampling positions are off by up
    to half a pixel on a 1080p frame)."""
    torch = require_torch()
    inverse = _host_inverses(affines)  # affines on the device are copied to the host
    if frame_index is None:
        index = [0] * len(inverse) if len(frames) == 1 else list(range(len(inverse)))
    else:
        index = list(frame_index)
    if len(index) != len(inverse):
        raise ValueError(f"{len(inverse)} affines but {len(index)} frame indices")
    w, h = (size, size) if isinstance(size, int) else size
    points = _points(to_device(inverse, frames.device), (w, h))
    corners = _corners(inverse, (w, h))
    crops = torch.empty(
        (len(index), h, w, frames.shape[3]), dtype=torch.float32, device=frames.device
    )
    big_h, big_w = frames.shape[1], frames.shape[2]
    # one sample per frame, its crops stacked along the grid's height, from the part of the
    # frame they read (every bilinear tap inside it; clipped to the frame): no frame copies.
    # The part is found on the host from the affines (the sampled points of an affine map
    # of a rectangle lie within its corners' bounds): no wait for the device here.
    for b in sorted(set(index)):
        members = [i for i, f in enumerate(index) if f == b]
        rows = to_device(members, frames.device)
        pts = points[rows]
        lo = np.floor(corners[members].reshape(-1, 2).min(0)).astype(int) - 1
        hi = np.ceil(corners[members].reshape(-1, 2).max(0)).astype(int) + 2
        x0, y0 = int(np.clip(lo[0], 0, big_w - 1)), int(np.clip(lo[1], 0, big_h - 1))
        x1, y1 = int(np.clip(hi[0], x0 + 1, big_w)), int(np.clip(hi[1], y0 + 1, big_h))
        grid = _normalised(pts, (x1 - x0, y1 - y0), (x0, y0)).reshape(1, len(rows) * h, w, 2)
        region = frames[b : b + 1, y0:y1, x0:x1]
        crops[rows] = _sample(region, grid, padding, torch.float32).reshape(len(rows), h, w, -1)
    return crops.to(torch.float16) if half else crops


def normalise(
    crops: Tensor,
    mean: float | Sequence[float],
    std: float | Sequence[float],
    rgb: bool = True,
    *,
    half: bool = False,
) -> Tensor:
    """(N, 3, H, W) model input from (N, H, W, 3) BGR crops: RGB first when ``rgb``, then
    (x - mean) / std per channel (in the model's channel order), float32 or float16."""
    torch = require_torch()
    x = crops.to(torch.float32)
    if rgb:
        x = x.flip(-1)
    m = to_device(mean, x.device, torch.float32)
    s = to_device(std, x.device, torch.float32)
    out = ((x - m) / s).permute(0, 3, 1, 2).contiguous()
    return out.to(torch.float16) if half else out


def split_tiles(crops: Tensor, k: int) -> Tensor:
    """``neural_swap.split_tiles`` on a tensor: (F, k*S, k*S, C) -> (F*k*k, S, S, C), each
    sub-image taking every k-th pixel."""
    f, size, _, c = crops.shape
    s = size // k
    tiles = crops.reshape(f, s, k, s, k, c).permute(0, 2, 4, 1, 3, 5)
    return tiles.reshape(f * k * k, s, s, c)


def join_tiles(tiles: Tensor, k: int) -> Tensor:
    """``neural_swap.join_tiles`` on a tensor: (F*k*k, S, S, C) -> (F, k*S, k*S, C)."""
    n, s, _, c = tiles.shape
    f = n // (k * k)
    crops = tiles.reshape(f, k, k, s, s, c).permute(0, 3, 1, 4, 2, 5)
    return crops.reshape(f, s * k, s * k, c)


def denormalise(
    output: Tensor, mean: float | Sequence[float], std: float | Sequence[float], rgb: bool = True
) -> Tensor:
    """(N, H, W, 3) uint8 BGR images from (N, 3, H, W) model output: x * std + mean per
    channel (in the model's channel order), clipped to 0..255, rounded half to even (as
    ``np.rint``), then BGR when ``rgb``. The inverse of ``normalise``."""
    torch = require_torch()
    x = output.to(torch.float32).permute(0, 2, 3, 1)
    m = to_device(mean, x.device, torch.float32)
    s = to_device(std, x.device, torch.float32)
    pixels = torch.round((x * s + m).clamp(0.0, 255.0)).to(torch.uint8)
    return pixels.flip(-1) if rgb else pixels
