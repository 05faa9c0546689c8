"""VirtualCamSink through the real pyvirtualcam.Camera and a registered recording backend."""

from __future__ import annotations

import platform
from collections.abc import Iterator

import numpy as np
import pytest
from conftest import other_hardware
from pyvirtualcam.camera import BACKENDS
from recording_backend import (
    FailingBackend,
    RecordingStore,
    register_failing_backend,
    unregister,
)

from livecam.errors import SinkError, VirtualCameraUnavailable
from livecam.sinks.virtualcam import VirtualCamSink, virtualcam_fix, virtualcam_status


@pytest.fixture
def failing() -> Iterator[str]:
    name = register_failing_backend()
    yield name
    unregister(name)


@pytest.fixture
def no_backends() -> Iterator[None]:
    """Temporarily empty pyvirtualcam's backend table (restored afterwards)."""
    saved = dict(BACKENDS)
    BACKENDS.clear()
    yield
    BACKENDS.clear()
    BACKENDS.update(saved)


def _frames(n: int, w: int = 96, h: int = 64) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    return [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for _ in range(n)]


def test_frames_reach_the_backend_unchanged(vcam: RecordingStore) -> None:
    sink = VirtualCamSink(backend=vcam.name)
    assert sink.device is None and sink.backend is None
    sent = _frames(12)
    sink.open(96, 64, 30.0)
    assert sink.device == vcam.device
    assert sink.backend == vcam.name
    assert vcam.opened == [{"width": 96, "height": 64, "fps": 30.0, "fmt": "24BG"}]
    for f in sent:
        sink.send(f)
    sink.close()
    sink.close()  # second close is harmless
    assert vcam.closed == 1
    assert len(vcam.frames) == len(sent)
    for got, want in zip(vcam.frames, sent, strict=True):
        assert got.frame.shape == (64, 96, 3)
        np.testing.assert_array_equal(got.frame, want)  # BGR in, BGR out, no conversion
    times = [r.t_ns for r in vcam.frames]
    assert times == sorted(times)


def test_device_is_passed_through(vcam: RecordingStore) -> None:
    sink = VirtualCamSink(backend=vcam.name, device="/dev/not-there")
    with pytest.raises(VirtualCameraUnavailable, match="not-there"):
        sink.open(96, 64, 30.0)
    ok = VirtualCamSink(backend=vcam.name, device=vcam.device)
    ok.open(96, 64, 30.0)
    assert ok.device == vcam.device
    ok.close()


def test_wrong_frame_size_is_a_sink_error(vcam: RecordingStore) -> None:
    sink = VirtualCamSink(backend=vcam.name)
    sink.open(96, 64, 30.0)
    with pytest.raises(SinkError, match="96x64"):
        sink.send(np.zeros((48, 64, 3), np.uint8))
    sink.close()
    assert vcam.frames == []


def test_send_before_open_is_a_sink_error() -> None:
    with pytest.raises(SinkError, match="before open"):
        VirtualCamSink().send(np.zeros((4, 4, 3), np.uint8))


def test_every_backend_failure_is_listed_with_the_fix(failing: str) -> None:
    """All backends tried (the failing one and, on Linux, the real v4l2loopback)."""
    sink = VirtualCamSink()
    try:
        sink.open(64, 48, 30.0)
    except VirtualCameraUnavailable as e:
        text = str(e)
    else:
        sink.close()
        other_hardware("a real virtual camera is available on this machine")
    assert f"'{failing}' backend: {FailingBackend.MESSAGE}" in text
    if platform.system() == "Linux":
        assert "'v4l2loopback' backend:" in text
        assert "sudo modprobe v4l2loopback devices=1 video_nr=10 exact_nr=1" in text
        assert "card_label=LiveCam exclusive_caps=1" in text
        assert "v4l2loopback-dkms" in text


def test_no_backend_registered(no_backends: None) -> None:
    with pytest.raises(VirtualCameraUnavailable) as info:
        VirtualCamSink().open(64, 48, 30.0)
    assert "no backend registered" in info.value.message
    assert info.value.hint == virtualcam_fix()


def test_unknown_backend_name_lists_registered(vcam: RecordingStore) -> None:
    with pytest.raises(VirtualCameraUnavailable) as info:
        VirtualCamSink(backend="nope").open(64, 48, 30.0)
    assert "'nope'" in info.value.message
    assert vcam.name in info.value.message


def test_fix_per_os() -> None:
    assert "modprobe v4l2loopback" in virtualcam_fix("Linux")
    assert "OBS" in virtualcam_fix("Windows") and "Virtual Camera" in virtualcam_fix("Windows")
    assert "system extension" in virtualcam_fix("Darwin")


def test_status_ok_with_a_working_backend(vcam: RecordingStore) -> None:
    ok, detail = virtualcam_status(backend=vcam.name)
    assert ok
    assert vcam.device in detail and vcam.name in detail
    assert vcam.opened[0]["width"] == 64 and vcam.closed == 1


def test_status_reports_failure_and_fix(failing: str) -> None:
    ok, detail = virtualcam_status(backend=failing)
    assert not ok
    assert FailingBackend.MESSAGE in detail
    assert "fix:" in detail and virtualcam_fix() in detail
