"""Colour transfer, mask building and alpha blending for face paste-back.

Pure functions on image regions (ROIs). Images are uint8 BGR or float32 Lab arrays of the
same (h, w); masks are float32 in [0, 1] unless said otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal

import cv2
import numpy as np
import numpy.typing as npt

FloatImage = npt.NDArray[np.float32]
ByteImage = npt.NDArray[np.uint8]
Points = npt.NDArray[np.float32]

ColorMode = Literal["lab", "rct", "none"]
ShareOnGrid = Callable[[FloatImage], FloatImage]
"""Given how much of each cell of a low pass's grid its mask covers (0..1), a share (0..1)
per cell."""


def to_lab(bgr: ByteImage) -> FloatImage:
    """uint8 BGR -> float32 Lab in OpenCV's 8-bit scaling (all channels 0..255)."""
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2LAB).astype(np.float32)


def from_lab(lab: FloatImage) -> ByteImage:
    """float32 Lab (8-bit scaling) -> uint8 BGR, clipped."""
    return np.asarray(
        cv2.cvtColor(np.clip(lab, 0, 255).astype(np.uint8), cv2.COLOR_LAB2BGR), np.uint8
    )


def masked_mean_std(
    img: FloatImage, weight: npt.NDArray[np.bool_]
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """Per-channel mean and standard deviation of ``img`` over the pixels where ``weight``."""
    c = img.shape[2]
    mask = weight.view(np.uint8) if weight.dtype == np.bool_ else weight.astype(np.uint8)
    if cv2.countNonZero(mask) < 2:
        return np.zeros(c, np.float32), np.ones(c, np.float32)
    mean, std = cv2.meanStdDev(img, mask=mask)
    return mean.reshape(c).astype(np.float32), std.reshape(c).astype(np.float32)


def transfer_stats(
    src: FloatImage,
    src_region: npt.NDArray[np.bool_],
    ref: FloatImage,
    ref_region: npt.NDArray[np.bool_],
) -> npt.NDArray[np.float32]:
    """The statistics a mean/std transfer uses, as one (4, C) array: ``src``'s mean and
    std over ``src_region``, then ``ref``'s over ``ref_region`` (a caller may smooth them
    over time before ``apply_mean_std``)."""
    mu_s, sd_s = masked_mean_std(src, src_region)
    mu_r, sd_r = masked_mean_std(ref, ref_region)
    return np.stack([mu_s, sd_s, mu_r, sd_r]).astype(np.float32)


def apply_mean_std(
    src: FloatImage, stats: npt.NDArray[np.float32], max_ratio: float = 2.0
) -> FloatImage:
    """Give ``src`` the reference mean/std of ``stats`` (``transfer_stats``); the std ratio
    is clipped to [1/max_ratio, max_ratio] so a flat region does not blow up noise, and on
    the colour channels (Lab a and b) to at most 1: a colour contrast stretched (by a cap
    brim or a shirt over the camera's face box, say) carries the source's greyer features
    (brows, stubble, the eyes' corners) through grey to the hue opposite its skin's, a teal
    or green that neither face has."""
    mu_s, sd_s, mu_r, sd_r = stats
    ratio = np.clip(sd_r / np.maximum(sd_s, 1e-3), 1.0 / max_ratio, max_ratio)
    ratio[1:] = np.minimum(ratio[1:], 1.0)
    if src.ndim != 3 or src.shape[2] > 4 or src.dtype != np.float32 or not src.flags.c_contiguous:
        return np.asarray((src - mu_s) * ratio + mu_r, np.float32)
    # OpenCV's per-channel scalars (float32, as the image): the same products as numpy's
    # broadcast of the (C,) statistics, bit for bit, without its inner loop of C values per
    # pixel (several times slower on a face ROI)
    out = cv2.subtract(src, _scalar(mu_s))
    cv2.multiply(out, _scalar(ratio), dst=out)
    cv2.add(out, _scalar(mu_r), dst=out)
    return np.asarray(out, np.float32)


def _scalar(values: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
    """Per-channel values as an OpenCV scalar (a (4, 1) float64 array, the rest 0)."""
    out = np.zeros((4, 1), np.float64)
    out[: len(values), 0] = values
    return out


def per_channel(weight: npt.NDArray[Any], channels: int) -> FloatImage:
    """A one-channel (h, w) ``weight`` as an (h, w, ``channels``) array, to multiply an
    image of that many channels: the same products as ``weight[..., None] * image``, bit
    for bit, but numpy runs that broadcast as an inner loop of ``channels`` values per
    pixel, several times slower on a face ROI than a product of two whole arrays."""
    if channels == 1 or weight.ndim != 2 or weight.dtype not in (np.float32, np.float64):
        return np.asarray(weight[..., None])  # what cv2.merge cannot take: broadcast
    merged: FloatImage = np.asarray(cv2.merge([np.ascontiguousarray(weight)] * channels))
    return merged


def masked_lowpass(img: FloatImage, mask: FloatImage, sigma: float) -> FloatImage:
    """Normalised-convolution Gaussian low-pass of ``img`` using only pixels where ``mask``.

    Computed at a reduced resolution (the result is smooth anyway), so its cost does not
    grow with sigma.
    """
    return masked_lowpasses([img], mask, sigma)[0]


def _grid(shape: tuple[int, ...], sigma: float) -> tuple[int, int, int]:
    """(width, height, scale): the reduced grid a low pass of ``sigma`` px over an image of
    ``shape`` is computed on (``scale`` px of the image a cell; sigma / scale about 3)."""
    h, w = shape[:2]
    scale = max(1, int(sigma / 3))
    return max(1, w // scale), max(1, h // scale), scale


def to_grid(img: FloatImage, scale: int) -> FloatImage:
    """``img`` (float32, (h, w) or (h, w, C)) averaged over cells of ``scale`` x ``scale``
    pixels: the grid of ``w // scale`` x ``h // scale`` whole cells (the last ``w %
    scale`` columns and ``h % scale`` rows, at the edge of a face's ROI, left out; an image
    smaller than a cell is one cell). OpenCV's area average over whole cells is its fast
    path: a fractional ratio (the image's size over the grid's) took 5-15x as long, a
    tenth of a millisecond for a face ROI's three channels. The light matching and the
    masked low passes keep the fractional ratio: not the same bits, and the stills bench's
    weakest pair (codait_bryan onto Obama's speech photo, its margin +0.003) turned."""
    h, w = img.shape[:2]
    if scale <= 1:
        return img
    gw, gh = max(1, w // scale), max(1, h // scale)
    if w >= scale and h >= scale:
        img = img[: gh * scale, : gw * scale]
    return np.asarray(cv2.resize(img, (gw, gh), interpolation=cv2.INTER_AREA), np.float32)


def from_grid(small: FloatImage, scale: int, shape: tuple[int, ...]) -> FloatImage:
    """A grid of ``to_grid(image of shape, scale)`` scaled back (bilinear) to ``shape``
    (h, w, ...): each cell's value at its cells' centre, the left-out columns and rows
    taking the last ones'."""
    h, w = shape[:2]
    gh, gw = small.shape[:2]
    if (gh, gw) == (h, w):
        return small
    big_w, big_h = gw * scale, gh * scale
    if big_w > w or big_h > h:  # an image smaller than a cell
        big_w, big_h = w, h
    big = np.asarray(cv2.resize(small, (big_w, big_h), interpolation=cv2.INTER_LINEAR), np.float32)
    if (big_h, big_w) == (h, w):
        return big
    return np.asarray(
        cv2.copyMakeBorder(big, 0, h - big_h, 0, w - big_w, cv2.BORDER_REPLICATE), np.float32
    )


def masked_lowpasses(imgs: list[FloatImage], mask: FloatImage, sigma: float) -> list[FloatImage]:
    """``masked_lowpass`` of each of ``imgs`` (the same size) with one ``mask`` and
    ``sigma``: the mask's share of the work done once."""
    h, w = mask.shape
    sw, sh, scale = _grid(mask.shape, sigma)
    small_m = cv2.resize(mask, (sw, sh), interpolation=cv2.INTER_AREA)
    s = sigma / scale
    den = cv2.GaussianBlur(small_m, (0, 0), s)
    outs = []
    for img in imgs:
        small_i = cv2.resize(img, (sw, sh), interpolation=cv2.INTER_AREA)
        channels = 1 if small_i.ndim == 2 else small_i.shape[2]
        num = cv2.GaussianBlur(small_i * per_channel(small_m, channels), (0, 0), s)
        small = num / np.maximum(per_channel(den, channels), 1e-4)
        out = np.asarray(cv2.resize(small, (w, h), interpolation=cv2.INTER_LINEAR), np.float32)
        outs.append(out[..., None] if out.ndim == 2 else out)
    return outs


def lowpass_difference(
    ref: FloatImage,
    src: FloatImage,
    mask: FloatImage,
    sigma: float,
    broad: ShareOnGrid | None = None,
    broad_scale: float = 2.5,
) -> FloatImage:
    """``masked_lowpass(ref) - masked_lowpass(src)`` (both (h, w, 3), one ``mask`` and
    ``sigma``), where ``broad`` says so (its share per cell of the low pass's grid, given
    the mask's cover of each) taken at ``broad_scale`` times the sigma instead. The
    difference is low-passed, not the two images (the same, but half the scaling), and one
    reduced grid serves both sigmas: the wide low pass is the narrow one's normalised
    convolution blurred on by the Gaussian that composes with it (sigma *
    sqrt(broad_scale^2 - 1)); the two are mixed there and scaled back once."""
    h, w = mask.shape
    sw, sh, scale = _grid(mask.shape, sigma)
    s = sigma / scale
    small_m = cv2.resize(mask, (sw, sh), interpolation=cv2.INTER_AREA)
    weight = per_channel(small_m, 3)
    den = cv2.GaussianBlur(small_m, (0, 0), s)
    gap = cv2.resize(cv2.subtract(ref, src), (sw, sh), interpolation=cv2.INTER_AREA)
    num = cv2.GaussianBlur(gap * weight, (0, 0), s)
    diff = num / np.maximum(per_channel(den, 3), 1e-4)
    if broad is not None and broad_scale > 1.0:
        more = s * math.sqrt(broad_scale * broad_scale - 1.0)
        wide_den = cv2.GaussianBlur(den, (0, 0), more)
        wide = cv2.GaussianBlur(num, (0, 0), more) / np.maximum(per_channel(wide_den, 3), 1e-4)
        diff += per_channel(broad(np.asarray(small_m, np.float32)), 3) * (wide - diff)
    return np.asarray(cv2.resize(diff, (w, h), interpolation=cv2.INTER_LINEAR), np.float32)


def color_transfer_lab(
    src: FloatImage,
    ref: FloatImage,
    region: npt.NDArray[np.bool_],
    mode: ColorMode,
    face_size: float,
    local_strength: float | FloatImage = 1.0,
    stats: npt.NDArray[np.float32] | None = None,
    broad: ShareOnGrid | None = None,
    broad_scale: float = 2.5,
) -> FloatImage:
    """Colour-match the warped source face ``src`` to the target ``ref`` (Lab, same ROI).

    ``lab``: per-channel mean/std transfer in Lab, then local illumination matching: the
    low-frequency difference (masked Gaussian, sigma about 1/7 of the face size) between
    target and source is added, so the target's shading (three-quarter light) carries over
    while the source's detail stays (``local_strength`` of it: one share, one per pixel,
    shape (H, W), or one per pixel and channel, (H, W, 3)). ``broad`` (0..1 on the low
    pass's grid, ``lowpass_difference``): per pixel, that share of the difference is taken
    at a ``broad_scale`` times wider sigma instead (the light's direction, not the shape of
    the features under it). ``rct``:
    Reinhard mean/std transfer in Lab only.
    ``none``: returns ``src`` unchanged. ``stats``: the mean/std statistics to use
    (``transfer_stats`` over ``region``, e.g. smoothed over frames); None measures them.
    """
    if mode == "none" or not region.any():
        return src
    if stats is None:
        stats = transfer_stats(src, region, ref, region)
    out = apply_mean_std(src, stats)
    if mode == "lab" and np.any(np.asarray(local_strength) > 0):
        m = region.astype(np.float32)
        sigma = max(2.0, face_size / 7.0)
        diff = lowpass_difference(ref, out, m, sigma, broad, broad_scale)
        if isinstance(local_strength, np.ndarray):
            diff *= local_strength if local_strength.ndim == 3 else local_strength[..., None]
        else:
            diff *= local_strength
        out += diff
    return out


def color_transfer(
    src_bgr: ByteImage,
    ref_bgr: ByteImage,
    region: npt.NDArray[np.bool_],
    mode: ColorMode,
    face_size: float,
    local_strength: float = 1.0,
) -> ByteImage:
    """``color_transfer_lab`` on uint8 BGR images (see there)."""
    if mode == "none" or not region.any():
        return src_bgr
    lab = color_transfer_lab(
        to_lab(src_bgr), to_lab(ref_bgr), region, mode, face_size, local_strength
    )
    return from_lab(lab)


DETAIL_SIGMA = 1.0
"""The Gaussian whose residual (grey minus its blur) is the fine detail that
``blur_to_match`` compares: skin texture, pores, grain, compression softness."""


def fine_detail(channel: FloatImage) -> FloatImage:
    """``channel`` minus its Gaussian blur of sigma ``DETAIL_SIGMA``."""
    return np.asarray(channel - cv2.GaussianBlur(channel, (0, 0), DETAIL_SIGMA), np.float32)


_BLUR_STEPS = (0.5, 0.75, 1.0, 1.35, 1.8, 2.4, 3.2)


def blur_to_match(
    src: FloatImage, ref: FloatImage, region: npt.NDArray[np.bool_], share: float = 1.0
) -> float:
    """The sigma of the Gaussian blur that gives ``src`` ``share`` times ``ref``'s
    fine-detail energy (mean square of ``fine_detail``) inside ``region`` (one channel
    each, same size): 0 when ``src`` is no sharper, at most the largest of the blurs
    tried, interpolated in log energy between them.

    The fine detail of a blurred image is its blurred fine detail (Gaussians commute), so
    only that one channel is blurred, on the region's bounding box."""
    sub = _region_box(region)
    if sub is None:
        return 0.0
    inside = region[sub]
    d_ref = fine_detail(_crop(ref, sub))
    target = share * float(np.mean(np.square(d_ref[inside])))
    d_src = fine_detail(_crop(src, sub))
    before = float(np.mean(np.square(d_src[inside])))
    if before <= target or target <= 0.0:
        return 0.0
    prev_sigma, prev_e = 0.0, before
    for sigma in _BLUR_STEPS:
        e = float(np.mean(np.square(cv2.GaussianBlur(d_src, (0, 0), sigma)[inside])))
        if e <= target:
            t = math.log(prev_e / target) / max(math.log(prev_e / max(e, 1e-9)), 1e-9)
            return prev_sigma + t * (sigma - prev_sigma)
        prev_sigma, prev_e = sigma, e
    return _BLUR_STEPS[-1]


def detail_gain(
    src: FloatImage,
    ref: FloatImage,
    region: npt.NDArray[np.bool_],
    share: float = 1.0,
    where: FloatImage | None = None,
    most: float = 1.0,
    ref_energy: float | None = None,
) -> float:
    """The gain (0..``most``) on ``src``'s finest band (``src`` minus its Gaussian blur of sigma
    ``DETAIL_SIGMA``) that gives blur + gain x band ``share`` times ``ref``'s fine-detail
    energy (``detail_energy``) inside ``region`` (one channel each, same size): 1 when
    ``src`` is no sharper, 0 when its blur alone is already as sharp.

    Unlike a Gaussian blur of the whole picture (``blur_to_match``) only that band is
    damped: the middle frequencies (the shape of the features, wrinkles) stay. The fine
    detail is linear in the gain, so its energy is a quadratic in it. ``where`` (0..1,
    same size): how much of the damping each pixel takes (the rest keeps its band).
    ``most`` above 1 lets a softer ``src`` have its band raised (at most that gain).
    ``ref_energy``: ``detail_energy(ref, region)`` when the caller has it already (the same
    number without its blur)."""
    sub = _region_box(region)
    if sub is None:
        return 1.0
    inside = region[sub]
    if ref_energy is None:
        ref_energy = float(np.mean(np.square(fine_detail(_crop(ref, sub))[inside])))
    target = share * ref_energy
    s = _crop(src, sub)
    low = np.asarray(cv2.GaussianBlur(s, (0, 0), DETAIL_SIGMA), np.float32)
    band = np.asarray(s - low, np.float32)
    if where is not None:
        damped = band * _crop(where, sub)
        low, band = np.asarray(low + (band - damped), np.float32), damped
    a = fine_detail(low)[inside]
    b = fine_detail(band)[inside]
    aa, ab, bb = float(np.mean(a * a)), float(np.mean(a * b)), float(np.mean(b * b))
    if bb <= 1e-9 or (most <= 1.0 and aa + 2.0 * ab + bb <= target):
        return 1.0
    if aa >= target:
        return 0.0
    # bb g^2 + 2 ab g + (aa - target) = 0: the root above 0 (energy aa below the target)
    return float(min(most, (-ab + math.sqrt(ab * ab + bb * (target - aa))) / bb))


def detail_energy(channel: FloatImage, region: npt.NDArray[np.bool_]) -> float:
    """The mean square of ``fine_detail(channel)`` inside ``region`` (0 when it is empty)."""
    sub = _region_box(region)
    if sub is None:
        return 0.0
    return float(np.mean(np.square(fine_detail(_crop(channel, sub))[region[sub]])))


def _region_box(region: npt.NDArray[np.bool_]) -> tuple[slice, slice] | None:
    """``region``'s bounding box with room for the blurs (None for under 16 pixels)."""
    mask = region.view(np.uint8)
    if cv2.countNonZero(mask) < 16:
        return None
    pad = 8
    x, y, w, h = cv2.boundingRect(mask)
    return slice(max(0, y - pad), y + h + pad), slice(max(0, x - pad), x + w + pad)


def _crop(channel: FloatImage, sub: tuple[slice, slice]) -> FloatImage:
    return np.ascontiguousarray(channel[sub], np.float32)


def skin_model(lab: FloatImage, sample: npt.NDArray[np.bool_]) -> npt.NDArray[np.float32] | None:
    """The skin colour model of ``skin_likelihood``: the Lab mean and covariance (lightly
    regularised) of the pixels in ``sample``, as one (4, 3) array (mean, then the
    covariance's rows); None for fewer than 10 pixels."""
    where = np.flatnonzero(sample)
    if where.size < 10:
        return None
    # every other pixel: the same statistics; taken by index (a boolean mask over the
    # three channels gathers at half the speed), the covariance as ``np.cov``'s
    px = np.take(lab.reshape(-1, 3), where[::2], axis=0).astype(np.float64)
    mean = px.mean(axis=0)
    d = px - mean
    cov = (d.T @ d) * (1.0 / (len(px) - 1)) + np.diag([4.0, 1.0, 1.0])
    return np.vstack([mean, cov]).astype(np.float32)


def skin_likelihood(
    lab: FloatImage,
    sample: npt.NDArray[np.bool_] | None,
    smooth: float,
    lo: float = 2.0,
    hi: float = 3.5,
    *,
    model: npt.NDArray[np.float32] | None = None,
    full_size: bool = False,
) -> FloatImage:
    """How skin-like each pixel is (0..1), judged against the skin sampled in ``sample``
    (or the ``skin_model`` given as ``model``, e.g. smoothed over frames).

    Mahalanobis distance in Lab to the sample's mean and covariance (lightly regularised):
    1 below ``lo``, 0 above ``hi``, linear between, then
    blurred with sigma ``smooth``. Computed at half resolution (``full_size``: at full).
    """
    h, w = lab.shape[:2]
    if model is None and sample is not None:
        model = skin_model(lab, sample)
    if model is None:
        return np.ones((h, w), np.float32)
    small = lab if full_size else to_grid(lab, 2)
    d2 = skin_distance2(small, model)
    p = np.clip((hi - np.sqrt(d2)) / (hi - lo), 0.0, 1.0).astype(np.float32)
    blurred = cv2.GaussianBlur(p, (0, 0), max(0.5, smooth if full_size else smooth / 2))
    if full_size:
        return np.asarray(blurred, np.float32)
    return from_grid(np.asarray(blurred, np.float32), 2, lab.shape)


def skin_distance2(lab: FloatImage, model: npt.NDArray[np.float32]) -> FloatImage:
    """Each pixel's squared Mahalanobis distance in Lab to the ``skin_model`` ``model``:
    d^T inv(cov) d, summed over (j, k) in that order in float32 on whole planes, which is
    what ``np.einsum("ij,jk,ik->i", d, inv, d)`` over the pixels gives, bit for bit (that
    einsum, and the (3,) mean broadcast over the pixels, run per pixel: 10x slower)."""
    mu = model[0].astype(np.float64)
    inv = np.linalg.inv(model[1:].astype(np.float64)).astype(np.float32)
    d = [lab[..., c] - np.float32(mu[c]) for c in range(3)]
    d2 = np.zeros(lab.shape[:2], np.float32)
    for j in range(3):
        for k in range(3):
            d2 += (d[j] * inv[j, k]) * d[k]
    return d2


def median(values: FloatImage) -> np.float32:
    """``np.median`` of a non-empty 1-D float32 array, bit for bit (the middle value, or
    the two middle values' float32 mean), from one ``np.partition``: a quarter of
    ``np.median``'s cost on the few hundred pixels a face's region holds."""
    n = values.size
    k = n // 2
    if n % 2:
        return np.float32(np.partition(values, k)[k])
    part = np.partition(values, (k - 1, k))
    return np.float32((part[k - 1] + part[k]) / np.float32(2))


def smoothstep(x: FloatImage, lo: float, hi: float) -> FloatImage:
    """0 below ``lo``, 1 above ``hi``, the smooth cubic between (elementwise)."""
    t = np.clip((x - lo) * (1.0 / max(hi - lo, 1e-6)), 0.0, 1.0)
    return np.asarray(t * t * (3.0 - 2.0 * t), np.float32)


def feather_mask(
    hull_mask: ByteImage,
    feather_px: float,
    keep_out: ByteImage | None = None,
    *,
    dist: FloatImage | None = None,
) -> FloatImage:
    """Alpha from a filled hull mask (uint8 0/255): 0 on the boundary, rising smoothly
    (smoothstep of the distance to the boundary) to 1 at ``feather_px`` inside.

    ``keep_out`` (uint8 0/255) marks regions that must show the target (e.g. the inner
    mouth); they are cut out with a soft edge of about ``feather_px / 6``. ``dist``: the
    hull's distance transform (L2, mask 3) when the caller has it already.
    """
    if dist is None:
        dist = np.asarray(cv2.distanceTransform(hull_mask, cv2.DIST_L2, 3), np.float32)
    t = np.clip(dist * (1.0 / max(feather_px, 1.0)), 0.0, 1.0)
    alpha: FloatImage = t * t * (3.0 - 2.0 * t)
    if keep_out is not None and keep_out.any():
        k = max(1.0, feather_px / 6.0)
        soft = cv2.GaussianBlur(keep_out.astype(np.float32) * (1.0 / 255.0), (0, 0), k)
        alpha *= 1.0 - np.clip(soft * 1.6, 0.0, 1.0)
    return alpha


def polygon_mask(shape: tuple[int, int], polygons: list[Points], convex: bool) -> ByteImage:
    """uint8 mask (0/255) of size ``shape`` (h, w) with the polygons filled."""
    mask = np.zeros(shape, np.uint8)
    for poly in polygons:
        pts = np.round(poly).astype(np.int32)
        if convex:
            cv2.fillConvexPoly(mask, cv2.convexHull(pts), 255, cv2.LINE_AA)
        else:
            cv2.fillPoly(mask, [pts], 255, cv2.LINE_AA)
    cv2.threshold(mask, 127, 255, cv2.THRESH_BINARY, dst=mask)  # under 128: 0, else 255
    return mask


def alpha_blend(dst: ByteImage, src: ByteImage, alpha: FloatImage) -> ByteImage:
    """``dst + alpha * (src - dst)``, rounded to uint8. Where alpha is 0 the result equals
    ``dst`` bit for bit."""
    d = dst.astype(np.float32)
    out = d + per_channel(alpha, 1 if d.ndim == 2 else d.shape[2]) * (src.astype(np.float32) - d)
    blended: ByteImage = np.clip(out + 0.5, 0, 255).astype(np.uint8)
    return blended


def seamless_blend(
    dst: ByteImage, src: ByteImage, alpha: FloatImage, threshold: float = 0.5
) -> ByteImage:
    """Poisson (cv2.seamlessClone) blend of ``src`` into ``dst`` (same size ROI) inside
    ``alpha > threshold``; the result is then alpha-blended so the edge stays soft and
    pixels with alpha 0 keep ``dst`` exactly."""
    mask = np.where(alpha > threshold, 255, 0).astype(np.uint8)
    h, w = mask.shape
    # seamlessClone needs the mask strictly inside the destination
    mask[:1, :] = 0
    mask[-1:, :] = 0
    mask[:, :1] = 0
    mask[:, -1:] = 0
    if not mask.any():
        return alpha_blend(dst, src, alpha)
    x, y, bw, bh = cv2.boundingRect(mask)
    center = (x + bw // 2, y + bh // 2)
    cloned = np.asarray(cv2.seamlessClone(src, dst, mask, center, cv2.NORMAL_CLONE), np.uint8)
    return alpha_blend(dst, cloned, alpha)
