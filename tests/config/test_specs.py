"""Source and sink specs, parsed once (livecam.config.specs) for the config, the option
checks and the factories."""

from __future__ import annotations

from pathlib import Path

import pytest

from livecam.config.schema import Config, SourceConfig
from livecam.config.specs import SinkSpec, SourceSpec, sink_file, source_file
from livecam.errors import SourceError
from livecam.sources import make_source, parse_screen_spec


@pytest.mark.parametrize(
    ("spec", "kind", "device", "webcam"),
    [
        ("3", "camera", 3, True),
        ("camera", "camera", 0, True),
        (" camera:2 ", "camera", 2, True),
        ("camera:/dev/video4", "camera", "/dev/video4", True),
        ("/dev/video1", "camera", "/dev/video1", True),
        ("/dev/fb0", "camera", "/dev/fb0", False),
        ("rtsp://cam/stream", "camera", "rtsp://cam/stream", False),
        ("synthetic", "synthetic", None, False),
        ("screen:2", "screen", None, False),
        ("clips/in.mp4", "file", None, False),
    ],
)
def test_source_specs(spec: str, kind: str, device: object, webcam: bool) -> None:
    parsed = SourceSpec.parse(spec)
    assert (parsed.kind, parsed.device, parsed.is_webcam) == (kind, device, webcam)
    assert parsed.problem is None
    assert source_file(spec) == (spec.strip() if kind == "file" else None)


@pytest.mark.parametrize(
    ("spec", "monitor", "region"),
    [("screen", 1, None), ("screen:0", 0, None), ("screen: 0, 10, 64, 48", 1, (0, 10, 64, 48))],
)
def test_screen_specs(spec: str, monitor: int, region: tuple[int, ...] | None) -> None:
    parsed = SourceSpec.parse(spec)
    assert (parsed.monitor, parsed.region) == (monitor, region)
    assert parse_screen_spec(spec) == (monitor, region)


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("screen:a", "monitor number or x,y,w,h"),
        ("screen:-1", "monitor numbers start at 1"),
        ("screen:1,2,3", "4 integers"),
        ("screen:0,0,0,5", "must be positive"),
        ("camera:-1", "camera indices start at 0"),
    ],
)
def test_a_bad_spec_is_one_source_error_from_the_factory(spec: str, says: str) -> None:
    assert says in (SourceSpec.parse(spec).problem or "")
    with pytest.raises(SourceError, match=says) as e:
        make_source(SourceConfig(spec=spec))
    assert f"source {spec!r}" in e.value.message


@pytest.mark.parametrize(
    ("spec", "kind", "suffix"),
    [
        ("virtualcam", "virtualcam", ""),
        (" Window ", "window", ""),
        ("AUTO", "auto", ""),
        ("null", "null", ""),
        ("rec/Out.MP4", "file", ".mp4"),
        ("last.png", "file", ".png"),
        ("", "file", ""),
    ],
)
def test_sink_specs(spec: str, kind: str, suffix: str) -> None:
    parsed = SinkSpec.parse(spec)
    assert (parsed.kind, parsed.suffix) == (kind, suffix)
    assert parsed.is_virtualcam == (kind in ("virtualcam", "auto"))
    assert sink_file(spec) == (spec if kind == "file" else None)


def test_the_config_rebases_only_the_specs_that_are_files(tmp_path: Path) -> None:
    cfg = Config.from_dict({"source": {"spec": "in.mp4"}, "output": {"sinks": ["Window", "o.png"]}})
    moved = cfg.with_paths_from(tmp_path)
    assert moved.source.spec == f"{tmp_path}/in.mp4"
    assert moved.output.sinks == ("Window", f"{tmp_path}/o.png")
