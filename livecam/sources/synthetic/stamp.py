"""A timestamp written into the pixels, for measuring glass-to-glass latency.

Layout: a grid of ``ROWS x COLS`` black/white blocks of ``BLOCK`` pixels in the top-left
corner (160 x 32 px). The 80 bits are an 8-bit marker, the 64-bit value (big-endian) and a
CRC-8 of the value. Blocks are aligned to the 8x8 grid JPEG and H.264 code in, and only
their centres are sampled, so the stamp survives ordinary compression (JPEG quality 90).
A frame without a stamp decodes to None: every block must be clearly black or white, the
marker must match and the CRC must agree.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from livecam.errors import FrameFormatError
from livecam.types import Frame

BLOCK = 8
COLS = 20
ROWS = 4
WIDTH = COLS * BLOCK
HEIGHT = ROWS * BLOCK
MARKER = 0b10110010
_MARGIN = 2  # pixels skipped at each block edge when sampling (compression ringing)
_DARK, _BRIGHT = 80, 175  # a sampled block outside both limits means "no stamp here"


def _crc8(data: bytes) -> int:
    """CRC-8 (polynomial 0x07, init 0)."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = ((crc << 1) ^ 0x07) & 0xFF if crc & 0x80 else (crc << 1) & 0xFF
    return crc


def _bits(value: int, width: int) -> list[int]:
    return [(value >> (width - 1 - i)) & 1 for i in range(width)]


def _value(bits: npt.NDArray[np.uint8]) -> int:
    out = 0
    for b in bits:
        out = (out << 1) | int(b)
    return out


def write_stamp(frame: Frame, t_ns: int) -> None:
    """Write ``t_ns`` (0 <= t_ns < 2**64) into the top-left 160x32 pixels of ``frame``."""
    if not 0 <= t_ns < 1 << 64:
        raise ValueError(f"stamp value {t_ns} does not fit in 64 unsigned bits")
    if frame.ndim != 3 or frame.shape[0] < HEIGHT or frame.shape[1] < WIDTH:
        raise FrameFormatError(
            f"frame of shape {frame.shape} is too small for a stamp",
            f"use frames of at least {WIDTH}x{HEIGHT} pixels",
        )
    payload = t_ns.to_bytes(8, "big")
    bits = _bits(MARKER, 8) + _bits(t_ns, 64) + _bits(_crc8(payload), 8)
    grid = np.array(bits, dtype=np.uint8).reshape(ROWS, COLS) * np.uint8(255)
    blocks = np.repeat(np.repeat(grid, BLOCK, axis=0), BLOCK, axis=1)
    frame[:HEIGHT, :WIDTH] = blocks[:, :, None]


def read_stamp(frame: Frame) -> int | None:
    """Return the value written by ``write_stamp``, or None when the frame has no stamp."""
    if frame.ndim != 3 or frame.shape[0] < HEIGHT or frame.shape[1] < WIDTH:
        return None
    area = frame[:HEIGHT, :WIDTH].astype(np.float32).mean(axis=2)
    cells = area.reshape(ROWS, BLOCK, COLS, BLOCK)[:, _MARGIN:-_MARGIN, :, _MARGIN:-_MARGIN]
    means = cells.mean(axis=(1, 3)).reshape(-1)
    if np.any((means > _DARK) & (means < _BRIGHT)):
        return None
    bits = (means >= 128).astype(np.uint8)
    if _value(bits[:8]) != MARKER:
        return None
    value = _value(bits[8:72])
    if _value(bits[72:]) != _crc8(value.to_bytes(8, "big")):
        return None
    return value
