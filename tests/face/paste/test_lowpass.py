"""The light matching's low pass of a difference (``colour.lowpass_difference``) on a real
portrait: the narrow low pass as two masked low passes give it, the wide one (the share
given per cell of its grid) as a masked low pass of the wider sigma gives it, though it is
computed on the narrow one's grid."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
from face_helpers import least_cpu
from face_parts_data import load_face_image

from livecam.face.paste import colour as blend

SIGMA = 10.0  # a face of 70 px eye to chin (sigma = size / 7)


def _pair(testdata: Path) -> tuple[blend.FloatImage, blend.FloatImage, blend.FloatImage]:
    """(ref, src, mask): the Obama portrait and itself moved 9 px right, in Lab, and an
    ellipse over the face."""
    img = load_face_image(testdata, "obama_official_portrait_2012.jpg", max_side=400)
    h, w = img.shape[:2]
    ref = blend.to_lab(img)
    src = blend.to_lab(np.ascontiguousarray(np.roll(img, 9, axis=1)))
    mask = np.zeros((h, w), np.float32)
    cv2.ellipse(mask, (w // 2, h // 2), (w // 4, h // 3), 0, 0, 360, 1.0, -1)
    return ref, src, mask


def _inside(mask: blend.FloatImage) -> np.ndarray:
    return np.asarray(cv2.erode((mask > 0).astype(np.uint8), np.ones((31, 31), np.uint8)) > 0)


def test_the_wide_low_pass_is_the_wider_sigmas_though_made_on_the_narrow_grid(
    testdata: Path,
) -> None:
    """Share 1 everywhere: the difference's low pass at 2.5 sigma, as two masked low
    passes of that sigma give it on their own coarser grid: 0.06 Lab levels apart on average
    inside the face (the signal there 2.2; the narrow low pass differs by 3.5; blurring on
    by 2.5 sigma, as if sigmas added, by 0.2; a wide sigma 1.6x too wide by 1.0). Share 0:
    the narrow low pass, to float rounding."""
    ref, src, mask = _pair(testdata)
    inside = _inside(mask)
    scale = 2.5
    exact_wide = np.subtract(*blend.masked_lowpasses([ref, src], mask, SIGMA * scale))
    exact_narrow = np.subtract(*blend.masked_lowpasses([ref, src], mask, SIGMA))
    grids: list[tuple[int, ...]] = []

    def everywhere(cover: blend.FloatImage) -> blend.FloatImage:
        grids.append(cover.shape)
        return np.ones_like(cover)

    wide = blend.lowpass_difference(ref, src, mask, SIGMA, everywhere, scale)
    narrow = blend.lowpass_difference(ref, src, mask, SIGMA, lambda c: np.zeros_like(c), scale)
    too_wide = blend.lowpass_difference(ref, src, mask, SIGMA, everywhere, scale * 1.6)
    h, w = mask.shape
    assert grids[0] == (h // 3, w // 3)  # the narrow sigma's grid: sigma / 3 px a cell

    def off(a: np.ndarray, b: np.ndarray) -> float:
        return float(np.abs(a - b)[inside].mean())

    assert float(np.abs(exact_wide[inside]).mean()) > 1.0  # there is a difference to pass
    assert off(wide, exact_wide) < 0.1, off(wide, exact_wide)
    assert off(narrow, exact_narrow) < 1e-3
    assert off(exact_narrow, exact_wide) > 2.0
    assert off(too_wide, exact_wide) > 0.5


def test_the_share_mixes_the_two_low_passes_where_it_says(testdata: Path) -> None:
    """The share given on the grid's left half 1, right half 0: the output's left part is
    the wide low pass, its right part the narrow one (away from the middle, where the
    scaling back blends the two)."""
    ref, src, mask = _pair(testdata)
    inside = _inside(mask)
    ones = blend.lowpass_difference(ref, src, mask, SIGMA, lambda c: np.ones_like(c))
    zeros = blend.lowpass_difference(ref, src, mask, SIGMA, lambda c: np.zeros_like(c))

    def left_half(cover: blend.FloatImage) -> blend.FloatImage:
        share = np.zeros_like(cover)
        share[:, : cover.shape[1] // 2] = 1.0
        return share

    mixed = blend.lowpass_difference(ref, src, mask, SIGMA, left_half)
    w = mask.shape[1]
    left, right = inside.copy(), inside.copy()
    left[:, w // 2 - 8 :] = False
    right[:, : w // 2 + 8] = False
    assert np.allclose(mixed[left], ones[left], atol=1e-4)
    assert np.allclose(mixed[right], zeros[right], atol=1e-4)
    assert not np.allclose(ones[right], zeros[right], atol=0.5)


def test_a_grid_of_whole_cells_is_the_cells_mean_and_scales_back_to_the_image(
    testdata: Path,
) -> None:
    """``to_grid`` on a portrait of odd size: each cell the mean of its scale x scale
    pixels (the last partial column and row left out), in half or less of the CPU time
    OpenCV's area resize takes to a grid of a fractional ratio (a third, one plane);
    ``from_grid`` brings it back to the image's size, the left-out column and rows the last
    ones' values."""
    img = load_face_image(testdata, "obama_official_portrait_2012.jpg", max_side=181)
    lab = blend.to_lab(np.ascontiguousarray(img[:181, :153]))
    h, w = lab.shape[:2]
    for scale in (2, 3, 5):
        small = blend.to_grid(lab, scale)
        gh, gw = h // scale, w // scale
        cells = lab[: gh * scale, : gw * scale].reshape(gh, scale, gw, scale, 3)
        assert np.allclose(small, cells.mean(axis=(1, 3)), atol=1e-3), scale
        back = blend.from_grid(small, scale, lab.shape)
        assert back.shape == lab.shape
        assert np.array_equal(
            back[:, gw * scale :],
            np.repeat(back[:, gw * scale - 1 :][:, :1], w - gw * scale, axis=1),
        )
        assert np.array_equal(
            back[gh * scale :], np.repeat(back[gh * scale - 1 :][:1], h - gh * scale, axis=0)
        )
    assert blend.to_grid(lab[:1, :1], 2).shape == (1, 1, 3)  # smaller than a cell: one cell
    plane = np.ascontiguousarray(lab[..., 0])
    fast, fractional = least_cpu(
        (
            lambda: blend.to_grid(lab, 2),
            lambda: cv2.resize(lab, (w // 2, h // 2), interpolation=cv2.INTER_AREA),
        )
    )
    assert fast < fractional / 2, (fast, fractional)
    fast, fractional = least_cpu(
        (
            lambda: blend.to_grid(plane, 2),
            lambda: cv2.resize(plane, (w // 2, h // 2), interpolation=cv2.INTER_AREA),
        )
    )
    assert fast < fractional / 3, (fast, fractional)
