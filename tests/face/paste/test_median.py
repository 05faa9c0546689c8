"""``colour.median``: numpy's median, bit for bit, on a real portrait's pixels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from face_parts_data import load_face_image

from livecam.face.paste import colour as blend


def test_the_median_is_numpys_on_odd_and_even_counts_with_ties(testdata: Path) -> None:
    """The Obama portrait's Lab planes, 300 runs of 1 to 2000 pixels from anywhere in it
    (8-bit levels: many ties): the very value and type ``np.median`` gives."""
    lab = blend.to_lab(load_face_image(testdata, "obama_official_portrait_2012.jpg"))
    pixels = lab.reshape(-1, 3)
    rng = np.random.default_rng(7)
    counts = {0: 0, 1: 0}
    for _ in range(300):
        n = int(rng.integers(1, 2000))
        start = int(rng.integers(0, len(pixels) - n))
        values = np.ascontiguousarray(pixels[start : start + n, int(rng.integers(0, 3))])
        values += np.float32(rng.random() * 0.5)  # not only whole levels
        ours, numpys = blend.median(values), np.median(values)
        assert ours == numpys and type(ours) is type(numpys), (n, ours, numpys)
        counts[n % 2] += 1
    assert min(counts.values()) > 100
