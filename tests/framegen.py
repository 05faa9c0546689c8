"""Test support: smooth, distinct frames that survive lossy video codecs, and PSNR."""

from __future__ import annotations

import numpy as np

from livecam.face.identity.metrics import psnr as psnr  # one PSNR for the tests (re-exported)


def smooth_frames(n: int, w: int = 160, h: int = 120) -> list[np.ndarray]:
    """Smooth, distinct frames: colour gradients with a soft blob that moves each frame."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    frames = []
    for i in range(n):
        cx, cy = 30 + 3 * i, 40 + 1.5 * i
        blob = 120 * np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * 18.0**2))
        b = 40 + 150 * xx / w + blob
        g = 60 + 120 * yy / h
        r = 200 - 120 * xx / w + 0.5 * blob
        frames.append(np.clip(np.dstack([b, g, r]), 0, 255).astype(np.uint8))
    return frames
