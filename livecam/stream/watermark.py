"""The invisible mark (EU AI Act Art. 50(2)): every swapped frame carries a machine-readable
payload in its luma that survives a video call, and anyone can read it back.

Scheme (NumPy/OpenCV only):

* A **grid** of ``ROWS`` (90) cells per frame height (cell = H / ROWS pixels, square: 8 px
  at 720p), so the mark scales with the frame: a downscale or a window screenshot that
  keeps the aspect keeps it in place.
* A **periodic keyed tile** of ``TILE`` x ``TILE`` (32 x 32) cells, repeated over the
  frame. It is the sum of a sync pattern ``S`` (75 % of the energy; keyed by the LiveCam
  tag: finding it *is* reading the tag) and ``SYMBOLS`` (4) payload patterns ``Q_j``, each
  circularly shifted by ``(u_j, v_j)`` (cyclic-shift keying: 10 bits per pattern, 40 in
  all = version 4 + session id 32 + check 4). The patterns are pseudo-random +-1 cells from
  a public key (anyone can verify), high-passed at the cell scale: their energy sits where
  natural images have little.
* **Embed**: the tile is resampled (bicubic) to the frame's pixels once per frame size;
  each frame then gets it added to B, G and R alike (a pure luma change) with two
  saturating uint8 passes. Blocks of 1/9 of the frame height that are flat (a cheap
  Laplacian on a sparse sample) get ``FLAT_GAIN`` (0.3) of the strength, since a faint
  pattern shows on a flat wall and hides in detail; a block's part of the pattern is
  re-composed only when its flatness changes (with hysteresis).
* **Detect**: luma -> resampled to 4 px per nominal cell -> for a candidate period scale
  (a crop or a letterboxed screenshot changes the period relative to the frame height;
  ``SCALES`` covers 0.75x..1.3x in 0.74 % steps, fine enough that folding a whole frame
  stays aligned) resized to 2 px per cell, whitened (each pixel minus its 8 neighbours'
  mean, local contrast normalised) and **folded** (summed modulo the tile) into one
  64 x 64 tile -> circular cross-correlation with ``S`` by FFT: its peak gives the offset
  (a crop), its height over the surface's spread is the score ``z``. The nominal scale is
  tried first; then a coarse pass (every 4th scale, on the middle 64 x 64 cells) and a fine
  pass around its two best. The fitted sync is taken out of the folded tile and the payload
  patterns' peaks relative to the sync peak give the shifts, hence the bits; over a stream
  the symbol correlations of the marked frames are summed before reading.

False alarms, computed: on an unmarked frame each hypothesis (a scale and a 64 x 64
offset; M = len(SCALES) * 4096 = 307200) gives a normalised correlation close to N(0, 1)
(bench/bench_watermark.py checks the null tails on every test-data frame); whatever subset
the search visits, by the union bound P(frame false alarm) <= M * Q(t). A window is marked
when more than half of its n frames are; by Markov's inequality on the count of falsely
marked frames (no independence between frames needed), P(window false alarm) <= n *
p_frame / (n / 2) = 2 * p_frame. ``THRESHOLD`` solves 2 * M * Q(t) = ``WINDOW_FALSE_ALARM``
(1e-6): Q(t) = 1.63e-12, t = 6.97.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field

import cv2
import numpy as np
import numpy.typing as npt

from livecam.types import Frame

FloatArray = npt.NDArray[np.float32]

#: the fixed LiveCam tag ("LC"); the sync pattern is keyed by it
TAG = 0x4C43
#: the payload format version this module writes
VERSION = 1
VERSION_BITS = 4
SESSION_BITS = 32
CHECK_BITS = 4
#: grid cells per frame height
ROWS = 90
#: the tile's side in cells; a symbol carries log2(TILE * TILE) = 10 bits
TILE = 32
SYMBOL_BITS = 10
SYMBOLS = (VERSION_BITS + SESSION_BITS + CHECK_BITS) // SYMBOL_BITS
#: RMS of the added luma change, in 8-bit levels (before rounding and clipping)
STRENGTH = 2.4
#: blocks per frame height that are marked at full strength or, when flat, at FLAT_GAIN
BLOCKS = 9
FLAT_GAIN = 0.3
#: a block turns flat when the mean absolute Laplacian of its green channel, sampled on
#: SAMPLE_ROWS rows per frame height, falls below FLAT_BELOW; detailed again above FLAT_ABOVE
SAMPLE_ROWS = 135
FLAT_BELOW = 5
FLAT_ABOVE = 6
#: share of the tile's energy in the sync pattern (the rest: the payload symbols)
SYNC_SHARE = 0.75
#: public key of the pattern generator (anyone can verify a mark; nobody needs a secret)
KEY = 0x11FE_CA3A_2026
#: candidate period scales (actual / nominal), ascending, in steps of 0.74 %: folding a
#: whole frame stays within half a cell of the period at the nearest one
SCALES: tuple[float, ...] = tuple(1.03 ** (0.25 * k) for k in range(-39, 36))
NOMINAL = 39  # SCALES[NOMINAL] == 1.0
#: the coarse pass tries every COARSE-th scale on a central REGION x REGION cells only
#: (small enough that a 1.5 % scale error stays within half a cell), then the fine pass
#: tries the REFINE best coarse scales' neighbours on the whole frame
COARSE = 4
REGION = 2 * TILE
REFINE = 2
#: false alarms allowed per window, and the per-hypothesis z threshold that ensures it
WINDOW_FALSE_ALARM = 1e-6
DET_CELL = 2  # detector pixels per cell when folding
DET_TILE = TILE * DET_CELL


def _gaussian_tail(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def threshold_for(hypotheses: int, window_false_alarm: float = WINDOW_FALSE_ALARM) -> float:
    """The z that keeps ``2 * hypotheses * Q(z) <= window_false_alarm`` (bisection)."""
    target = window_false_alarm / (2.0 * hypotheses)
    lo, hi = 0.0, 40.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if _gaussian_tail(mid) > target:
            lo = mid
        else:
            hi = mid
    return hi


HYPOTHESES = len(SCALES) * DET_TILE * DET_TILE
THRESHOLD = threshold_for(HYPOTHESES)


@dataclass(frozen=True)
class Payload:
    """What a mark says: the LiveCam ``tag``, the format ``version`` and a per-session
    random ``session_id`` (16 + 4 + 32 = 52 bits)."""

    session_id: int
    version: int = VERSION
    tag: int = TAG

    def __post_init__(self) -> None:
        if not 0 <= self.session_id < 1 << SESSION_BITS:
            raise ValueError(f"session_id must fit in {SESSION_BITS} bits: {self.session_id}")
        if not 0 <= self.version < 1 << VERSION_BITS:
            raise ValueError(f"version must fit in {VERSION_BITS} bits: {self.version}")
        if self.tag != TAG:
            raise ValueError(f"tag must be LiveCam's {TAG:#x}: {self.tag:#x}")

    def symbols(self) -> tuple[int, ...]:
        """The payload as ``SYMBOLS`` 10-bit shifts (version, session id, check bits)."""
        data = (self.version << SESSION_BITS) | self.session_id
        word = (data << CHECK_BITS) | _check(data)
        mask = (1 << SYMBOL_BITS) - 1
        return tuple((word >> (SYMBOL_BITS * j)) & mask for j in range(SYMBOLS))

    @staticmethod
    def from_symbols(symbols: Iterable[int]) -> Payload | None:
        """The payload ``symbols`` spell, or None when the check bits disagree."""
        word = 0
        for j, symbol in enumerate(symbols):
            word |= int(symbol) << (SYMBOL_BITS * j)
        data, check = word >> CHECK_BITS, word & ((1 << CHECK_BITS) - 1)
        if _check(data) != check:
            return None
        return Payload(session_id=data & ((1 << SESSION_BITS) - 1), version=data >> SESSION_BITS)


def _check(data: int) -> int:
    """CHECK_BITS of a keyed hash of the payload data."""
    mixed = (data * 0x9E3779B97F4A7C15 + KEY) & ((1 << 64) - 1)
    mixed ^= mixed >> 29
    mixed = (mixed * 0xBF58476D1CE4E5B9) & ((1 << 64) - 1)
    return (mixed >> 40) & ((1 << CHECK_BITS) - 1)


def new_session_payload() -> Payload:
    """A payload with a fresh random session id."""
    return Payload(session_id=secrets.randbits(SESSION_BITS))


def _patterns() -> tuple[FloatArray, list[FloatArray]]:
    """The sync pattern and the payload patterns (TILE x TILE, +-1, zero mean)."""
    rng = np.random.default_rng([KEY, TAG])
    cells = rng.integers(0, 2, size=(1 + SYMBOLS, TILE, TILE)).astype(np.float32) * 2 - 1
    # high-pass at the cell scale (each cell minus its 8 neighbours' mean, wrapping): the
    # energy goes where natural images have little, and little of it is lost to whitening
    around = sum(
        np.roll(cells, (a, b), axis=(1, 2)) for a in (-1, 0, 1) for b in (-1, 0, 1) if a or b
    )
    cells = cells - around / 8
    cells -= cells.mean(axis=(1, 2), keepdims=True)
    cells /= np.sqrt(np.mean(cells**2, axis=(1, 2), keepdims=True))
    return cells[0], list(cells[1:])


def _tile(payload: Payload) -> FloatArray:
    """The marked tile for ``payload`` at unit RMS (cells)."""
    sync, patterns = _patterns()
    data = np.zeros_like(sync)
    for pattern, symbol in zip(patterns, payload.symbols(), strict=True):
        u, v = divmod(symbol, TILE)
        data += np.roll(pattern, (u, v), axis=(0, 1))
    sync /= float(np.sqrt(np.mean(sync**2)))
    data /= float(np.sqrt(np.mean(data**2)))
    tile = math.sqrt(SYNC_SHARE) * sync + math.sqrt(1 - SYNC_SHARE) * data
    return (tile / float(np.sqrt(np.mean(tile**2)))).astype(np.float32)


def _resample_tile(
    tile: FloatArray, cell: float, height: int, width: int, skip: int = 0
) -> FloatArray:
    """``tile`` repeated and resampled (bicubic, the same scale ``cell`` in pixels per cell
    along both axes) to ``height`` x ``width`` pixels, leaving out the first ``skip``
    pixels of each axis (where the resampling meets the border)."""
    reps_y = int(math.ceil((height + skip) / cell / TILE)) + 1
    reps_x = int(math.ceil((width + skip) / cell / TILE)) + 1
    big = np.tile(tile, (reps_y, reps_x))
    out = cv2.resize(big, (0, 0), fx=cell, fy=cell, interpolation=cv2.INTER_CUBIC)
    return np.ascontiguousarray(out[skip : skip + height, skip : skip + width], dtype=np.float32)


def _levels(delta: FloatArray) -> tuple[Frame, Frame]:
    """(positive part, negative part) of ``delta``, rounded to 8-bit levels, 3 channels."""
    # convertScaleAbs rounds to the nearest level and saturates to uint8
    plus = cv2.convertScaleAbs(np.maximum(delta, 0.0))
    minus = cv2.convertScaleAbs(np.minimum(delta, 0.0))
    return (
        np.asarray(cv2.merge([plus, plus, plus]), dtype=np.uint8),
        np.asarray(cv2.merge([minus, minus, minus]), dtype=np.uint8),
    )


@dataclass
class _Pattern:
    """The pixel pattern of one frame size: ``delta`` (float, full strength) and the
    saturating uint8 additions ``plus`` and ``minus`` in use, composed block by block
    (``rows`` x ``cols`` bounds) at full strength or, on blocks marked ``flat``, at
    FLAT_GAIN of it."""

    delta: FloatArray
    plus: Frame
    minus: Frame
    rows: tuple[int, ...]
    cols: tuple[int, ...]
    flat: npt.NDArray[np.bool_]

    @staticmethod
    def build(tile: FloatArray, strength: float, width: int, height: int) -> _Pattern:
        delta = _resample_tile(tile, height / ROWS, height, width) * strength
        plus, minus = _levels(delta)
        side = height / BLOCKS
        rows = tuple(int(round(side * i)) for i in range(BLOCKS + 1))
        count = max(1, int(round(width / side)))
        cols = tuple(int(round(width * i / count)) for i in range(count + 1))
        flat = np.zeros((BLOCKS, count), np.bool_)
        return _Pattern(delta, plus, minus, rows, cols, flat)

    def activity(self, frame: Frame) -> npt.NDArray[np.uint8]:
        """Per block: the mean absolute Laplacian of the green channel sampled on a grid of
        SAMPLE_ROWS rows per frame height (cheap: about 1/64 of the pixels at 1080p)."""
        step = max(1, int(round(frame.shape[0] / SAMPLE_ROWS)))
        green = np.ascontiguousarray(frame[::step, ::step, 1])
        detail = cv2.convertScaleAbs(cv2.Laplacian(green, cv2.CV_16S))
        shape = (self.flat.shape[1], self.flat.shape[0])
        return np.asarray(cv2.resize(detail, shape, interpolation=cv2.INTER_AREA))

    def follow(self, frame: Frame) -> None:
        """Re-compose the blocks whose flatness changed in ``frame`` (with hysteresis, so
        a block on the edge does not flip every frame)."""
        activity = self.activity(frame)
        flat = np.where(
            activity < FLAT_BELOW, True, np.where(activity > FLAT_ABOVE, False, self.flat)
        )
        for r, c in zip(*np.nonzero(flat != self.flat), strict=True):
            ys = slice(self.rows[r], self.rows[r + 1])
            xs = slice(self.cols[c], self.cols[c + 1])
            gain = FLAT_GAIN if flat[r, c] else 1.0
            self.plus[ys, xs], self.minus[ys, xs] = _levels(self.delta[ys, xs] * gain)
        self.flat = flat


@dataclass
class Watermarker:
    """Marks frames with ``payload``. The pixel pattern is built once per frame size;
    each frame then costs a cheap flatness map of its blocks and two saturating uint8
    passes. Flat blocks (where a faint pattern would show) get FLAT_GAIN of the strength;
    a block is re-composed only when its flatness changes."""

    payload: Payload
    strength: float = STRENGTH
    _tile: FloatArray = field(init=False, repr=False)
    _pattern: _Pattern | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self._tile = _tile(self.payload)

    def prepare(self, width: int, height: int) -> None:
        """Build the pixel pattern for ``width`` x ``height`` frames now (the first frame
        of a new size otherwise pays for it: ~20 ms at 720p, ~40 ms at 1080p, under load)."""
        self._pattern = _Pattern.build(self._tile, self.strength, width, height)

    def embed(self, frame: Frame) -> Frame:
        """A marked copy of ``frame`` (uint8 BGR, H x W x 3); the input is not changed."""
        height, width = frame.shape[:2]
        if self._pattern is None or self._pattern.plus.shape[:2] != (height, width):
            self.prepare(width, height)
        pattern = self._pattern
        assert pattern is not None
        pattern.follow(frame)
        out = cv2.add(frame, pattern.plus)
        cv2.subtract(out, pattern.minus, dst=out)
        return np.asarray(out, dtype=np.uint8)


@dataclass(frozen=True)
class FrameDetection:
    """One frame's verdict: ``marked`` when the sync score ``score`` (z) passes
    ``THRESHOLD``; ``payload`` when its symbols read back with a good check."""

    marked: bool
    score: float
    payload: Payload | None
    scale: float = 1.0
    offset: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class StreamDetection:
    """A stream's verdict over windows of frames: a window is marked when more than half
    of its frames are; the stream is ``marked`` when any window is. ``payload``: read from
    the marked frames' summed correlations."""

    frames_total: int
    frames_marked: int
    windows_total: int
    windows_marked: int
    payload: Payload | None
    marked: bool


#: each cell minus the mean of its 8 neighbours (at DET_CELL pixels per cell): a prediction
#: error filter that removes most of a natural image and keeps the high-passed mark
_RING = np.full((3, 3), -1 / 8, np.float32)
_RING[1, 1] = 1


def _whiten(image: FloatArray) -> FloatArray:
    """``image`` (DET_CELL px per cell) high-passed, then local contrast normalised."""
    band = cv2.filter2D(image, -1, _RING)
    energy = cv2.GaussianBlur(cv2.multiply(band, band), (0, 0), 1.0)
    out = cv2.divide(band, cv2.sqrt(energy + np.float32(1.0)))
    return np.asarray(np.clip(out, -3.0, 3.0, out=out), dtype=np.float32)


def _fold(image: FloatArray) -> FloatArray:
    """``image`` summed modulo DET_TILE in both axes (zero padded)."""
    h, w = image.shape
    ny, nx = -(-h // DET_TILE), -(-w // DET_TILE)
    padded = np.zeros((ny * DET_TILE, nx * DET_TILE), np.float32)
    padded[:h, :w] = image
    folded = padded.reshape(ny, DET_TILE, nx, DET_TILE).sum(axis=(0, 2))
    return np.asarray(folded, dtype=np.float32)


Spectrum = npt.NDArray[np.complex128]
Scores = npt.NDArray[np.float64]


def _z(surface: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """A correlation surface in units of its spread around its mean (a mark's peak only
    widens the spread a little: the score errs low, never high)."""
    mean, std = cv2.meanStdDev(surface)
    return np.asarray((surface - float(mean[0, 0])) / (float(std[0, 0]) + 1e-12), np.float32)


@dataclass(frozen=True)
class _Hit:
    """The best sync peak of a frame: score, offset (detector pixels), scale, spectrum."""

    z: float
    dy: int
    dx: int
    scale: float
    spectrum: Spectrum


class Detector:
    """Reads marks. Holds the reference spectra; one per caller, no shared state."""

    def __init__(self, threshold: float = THRESHOLD) -> None:
        self.threshold = threshold
        sync, patterns = _patterns()
        self._sync_ref = self._reference(sync)
        self._sync = np.conj(np.fft.rfft2(self._sync_ref))
        self._symbols = [np.conj(np.fft.rfft2(self._reference(p))) for p in patterns]

    @staticmethod
    def _reference(cells: FloatArray) -> FloatArray:
        ref = _resample_tile(cells, float(DET_CELL), DET_TILE, DET_TILE, skip=DET_TILE)
        return np.asarray(ref - ref.mean(), dtype=np.float32)

    @staticmethod
    def prepare(frame: Frame) -> FloatArray:
        """The luma at twice DET_CELL pixels per nominal cell (float32)."""
        luma = frame if frame.ndim == 2 else cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
        factor = 2 * DET_CELL * ROWS / luma.shape[0]
        small = cv2.resize(luma, (0, 0), fx=factor, fy=factor, interpolation=cv2.INTER_AREA)
        return np.asarray(small, dtype=np.float32)

    def correlate(self, luma: FloatArray, scale: float, central: bool = False) -> _Hit:
        """The sync peak of ``luma`` (from ``prepare``) at period scale ``scale``, over the
        whole frame or (``central``) over a REGION x REGION cells window in its middle."""
        if central:
            side = int(round(2 * DET_CELL * REGION * scale))
            h, w = luma.shape
            y0, x0 = max(0, (h - side) // 2), max(0, (w - side) // 2)
            luma = luma[y0 : y0 + side, x0 : x0 + side]
        factor = 0.5 / scale
        resized = cv2.resize(luma, (0, 0), fx=factor, fy=factor, interpolation=cv2.INTER_LINEAR)
        spectrum: Spectrum = np.fft.rfft2(_fold(_whiten(np.asarray(resized, np.float32))))
        surface = _z(self._correlation(spectrum, self._sync))
        dy, dx = divmod(int(np.argmax(surface)), DET_TILE)
        return _Hit(float(surface[dy, dx]), dy, dx, scale, spectrum)

    @staticmethod
    def _correlation(spectrum: Spectrum, reference: Spectrum) -> npt.NDArray[np.float32]:
        """Circular cross-correlation (DET_TILE x DET_TILE) from the two rfft2 spectra."""
        surface = np.fft.irfft2(spectrum * reference, s=(DET_TILE, DET_TILE))
        return np.asarray(surface, dtype=np.float32)

    def symbol_scores(self, hit: _Hit) -> Scores:
        """(SYMBOLS, TILE * TILE) normalised correlations at the cell shifts from the sync.
        The sync found is fitted (least squares) and taken out first: with 75 % of the
        energy, its leak into the symbol correlations would be the same in every frame
        and would not average out over a stream."""
        folded = np.fft.irfft2(hit.spectrum, s=(DET_TILE, DET_TILE))
        sync = np.roll(self._sync_ref, (hit.dy, hit.dx), axis=(0, 1))
        gain = float(np.sum(folded * sync)) / float(np.sum(sync * sync))
        spectrum: Spectrum = np.fft.rfft2(folded - gain * sync)
        rows = (hit.dy + DET_CELL * np.arange(TILE)) % DET_TILE
        cols = (hit.dx + DET_CELL * np.arange(TILE)) % DET_TILE
        out = np.empty((SYMBOLS, TILE * TILE))
        for j, ref in enumerate(self._symbols):
            surface = _z(self._correlation(spectrum, ref))
            out[j] = surface[np.ix_(rows, cols)].ravel()
        return out

    def _best(self, luma: FloatArray) -> _Hit:
        """The best sync peak over a subset of the SCALES x offsets hypotheses: the
        nominal scale, and unless it is clearly marked, the coarse-to-fine search. (Any
        subset keeps the union bound on false alarms computed over all of them.)"""
        best = self.correlate(luma, SCALES[NOMINAL])
        if best.z > 1.5 * self.threshold:
            return best
        coarse = sorted(
            range(NOMINAL % COARSE, len(SCALES), COARSE),
            key=lambda i: self.correlate(luma, SCALES[i], central=True).z,
        )[-REFINE:]
        fine = {j for i in coarse for j in range(i - COARSE // 2, i + COARSE // 2 + 1)}
        for j in sorted(fine - {NOMINAL}):
            if 0 <= j < len(SCALES):
                hit = self.correlate(luma, SCALES[j])
                best = hit if hit.z > best.z else best
        return best

    def _search(self, frame: Frame) -> tuple[FrameDetection, Scores | None]:
        best = self._best(self.prepare(frame))
        offset = (best.dy, best.dx)
        if best.z <= self.threshold:
            return FrameDetection(False, best.z, None, best.scale, offset), None
        scores = self.symbol_scores(best)
        payload = Payload.from_symbols(int(np.argmax(row)) for row in scores)
        return FrameDetection(True, best.z, payload, best.scale, offset), scores

    def frame(self, frame: Frame) -> FrameDetection:
        """The verdict on one frame (BGR or grey uint8)."""
        return self._search(frame)[0]

    def frames(self, frames: Iterable[Frame], window: int) -> StreamDetection:
        """The verdict on a stream, in consecutive windows of ``window`` frames (the last
        one may be shorter)."""
        if window < 1:
            raise ValueError(f"window must be at least 1 frame: {window}")
        total = marked = windows = windows_marked = in_window = marked_in_window = 0
        summed: Scores | None = None
        for image in frames:
            result, scores = self._search(image)
            total += 1
            in_window += 1
            if result.marked:
                marked += 1
                marked_in_window += 1
            if scores is not None:
                summed = scores if summed is None else summed + scores
            if in_window == window:
                windows += 1
                windows_marked += 2 * marked_in_window > in_window
                in_window = marked_in_window = 0
        if in_window:
            windows += 1
            windows_marked += 2 * marked_in_window > in_window
        payload = None
        if summed is not None:
            payload = Payload.from_symbols(int(np.argmax(row)) for row in summed)
        return StreamDetection(total, marked, windows, windows_marked, payload, windows_marked > 0)


def detect_frames(frames: Iterable[Frame], window: int) -> StreamDetection:
    """The verdict on a stream of frames in windows of ``window`` frames (see ``Detector``)."""
    return Detector().frames(frames, window)
