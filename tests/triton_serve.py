"""Test support for the remote swap: a real `livecam serve` (NVIDIA Triton through
PyTriton) in a child process on 127.0.0.1 with the tests' token (the rig itself, with the
delay proxy, is ``livecam.benchmark.remote_rig``, shared with bench/bench_remote.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from livecam.benchmark.remote_rig import ServeChild, serve_child
from livecam.config.remote import RemoteConfig, parse_address
from livecam.face.swap.neural import NeuralSwapper
from livecam.remote.link import RemoteLink
from livecam.remote.swapper import RemoteSwapper
from livecam.types import Face, FaceWork, FrameContext

TOKEN = "test-token-2f9c"
Served = ServeChild


@contextmanager
def served(
    model: Path,
    log: Path,
    token: str | None = TOKEN,
    queue_delay_us: int = 2000,
    enhancer_model: Path | None = None,
) -> Iterator[ServeChild]:
    """`livecam serve` of ``model`` (and ``enhancer_model`` as GPEN-BFR-256) with the
    tests' token (``ServeChild``), killed after."""
    with serve_child(model, log, token, queue_delay_us, enhancer_model) as server:
        yield server


def remote_swapper(
    local: NeuralSwapper,
    url: str,
    token: str | None = TOKEN,
    close_local: bool = False,
    **settings: object,
) -> RemoteSwapper:
    """A RemoteSwapper in front of ``local`` (closed with it when ``close_local``), with
    its monitor thread."""
    cfg = RemoteConfig(url=url, token=token, **settings)  # type: ignore[arg-type]
    link = RemoteLink(parse_address(url), token=token, timeout_s=cfg.timeout_ms / 1000)
    return RemoteSwapper(local, link, cfg, close_local=close_local)


def face_work(face: Face, index: int = 0) -> FaceWork:
    return FaceWork(0, index, face, source_index=0)


def face_region(frame: FrameContext, face: Face, grow: float = 0.4) -> tuple[slice, slice]:
    kps = np.asarray(face.kps)
    lo, hi = kps.min(axis=0), kps.max(axis=0)
    pad = grow * (hi - lo)
    (x1, y1), (x2, y2) = np.maximum(lo - pad, 0).astype(int), (hi + pad).astype(int)
    return slice(y1, min(y2, frame.shape[0])), slice(x1, min(x2, frame.shape[1]))


def needs_serve_extra() -> None:
    """The remote tests need the serve extra (PyTriton; Linux x86_64): skipped on a
    developer machine without it, failed in CI (``conftest.missing``)."""
    import importlib.util

    from conftest import missing

    if importlib.util.find_spec("pytriton") is None:
        missing("the serve extra (nvidia-pytriton)")
