"""`livecam bench` on the real pipeline (real models, real portraits; small frame counts,
no timing assertions): the figures it reports, the pixel stamps decoded at the sink, the
naive comparison, its JSON file rules and its one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_output import one_line_error

from livecam.cli.main import main
from livecam.face.detect.yunet import YuNetDetector, bundled_yunet
from livecam.sources.synthetic.multi_face import TOP_BAND, portrait_grid
from livecam.sources.synthetic.portraits import demo_portraits
from livecam.sources.synthetic.stamp import HEIGHT, WIDTH
from livecam.types import FrameContext


@pytest.fixture
def lite_models(testdata: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = testdata / "models"
    monkeypatch.setenv("LIVECAM_MODELS_DIR", str(folder))
    return folder


def read_json(path: Path) -> dict:
    data = json.loads(path.read_text())
    assert isinstance(data, dict)
    return data


def test_lite_bench_reports_every_figure_and_the_naive_ratio(
    lite_models: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The example of the issue, shortened; an existing JSON file is kept (the figures go
    to a new timestamped name beside it)."""
    kept = tmp_path / "out.json"
    kept.write_text("mine\n")
    argv = ["bench", "--preset", "lite", "--size", "640x480", "--frames", "40"]
    argv += ["--compare", "naive", "--naive-frames", "4", "--json", str(kept)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert kept.read_text() == "mine\n", "the user's file is never replaced without --overwrite"
    written = [p for p in tmp_path.glob("out-*.json")]
    assert len(written) == 1 and f"wrote {written[0]}" in out
    r = read_json(written[0])
    assert r["preset"] == "lite" and r["mode"] == "live" and r["size"] == [640, 480]
    assert r["provider"] == "cpu" and r["providers"]["swap"]["used"] == "cpu"
    assert r["fps_out"] > 0 and r["frames_out"] > 0
    lat = r["latency_ms"]
    assert lat["from"] == "pixel stamps" and r["stamps_decoded"] > 0
    assert 0 < lat["p50"] <= lat["p99"]
    assert r["stamps_decoded"] + r["stamps_missed"] == r["frames_out"]
    assert set(r["stages_ms"]) == {"track", "swap"}, "finding faces, then swapping them"
    for stage in ("track", "swap"):
        assert 0 < r["stages_ms"][stage]["p50"] <= r["stages_ms"][stage]["p99"]
    assert r["overlap"] is False, "on a CPU the tracking runs before the swap"
    assert r["faces_per_frame"] > 0.5 and r["faces_per_s"] > 0, "the astronaut is swapped"
    assert r["peak_rss_mb"] > 50
    assert r["peak_vram_mb"] == "n/a" or r["peak_vram_mb"] > 0
    assert r["cache"] == "off (this swapper cannot reuse)", "lite's classic swapper"
    assert r["faces_reused"] == 0 and r["frames_captured"] == 40
    mark = r["watermark_ms"]  # the invisible mark's own stage, timed after the run
    assert mark["frames"] == 100 and 0 < mark["p50"] <= mark["p99"]
    assert "stage watermark p50 / p99" in out
    naive = r["naive"]
    assert naive["frames"] == 4 and naive["faces_swapped"] >= 3
    assert naive["ms_per_frame"] > 0 and naive["ratio"] > 0
    assert f"{naive['ratio']}x" in out and "latency p50 / p99" in out


def test_synthetic_standard_swaps_both_faces_in_throughput_mode(
    lite_models: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--synthetic narrow builds the standard preset's models here (real SCRFD, a recognizer
    made from the real MobileFaceNet, the narrow synthetic inswapper); two real portraits
    side by side are both swapped; --overwrite replaces the JSON file; cache off."""
    out = tmp_path / "standard.json"
    out.write_text("old\n")
    argv = ["bench", "--synthetic", "narrow", "--synthetic-dir", str(tmp_path / "models")]
    argv += ["--faces", "2", "--mode", "throughput", "--batch", "4", "--frames", "12"]
    argv += ["--cache", "off", "--json", str(out), "--overwrite"]
    assert main(argv) == 0
    capsys.readouterr()
    r = read_json(out)
    assert r["preset"] == "standard" and r["mode"] == "throughput" and r["batch_limit"] == 4
    assert r["swapper"].endswith("inswapper_like_w128.onnx") and r["cache"] == "off"
    assert r["frames_out"] == 12 and r["dropped"] == 0, "throughput mode is lossless"
    assert r["faces_per_frame"] > 1.5, "both portraits are swapped"
    assert r["stamps_decoded"] > 0 and r["latency_ms"]["from"] == "pixel stamps"
    assert r["provider"] == "cpu" and r["naive"] is None
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == [
        "arcface_like.onnx",
        "inswapper_like_w128.onnx",
    ]


@pytest.mark.parametrize(("faces", "size"), [(2, (640, 480)), (4, (640, 480)), (4, (1920, 1080))])
def test_portrait_grid_faces_are_found_at_8_to_40_percent_of_the_width(
    faces: int, size: tuple[int, int]
) -> None:
    with demo_portraits() as (face, target):
        grid = portrait_grid([target, face], faces, size)
    assert grid.shape == (size[1], size[0], 3)
    found = YuNetDetector(bundled_yunet(), max_sides=(640, 1280)).detect([FrameContext(grid)])[0]
    assert len(found) == faces
    for f in found:
        x0, y0, x1, _ = f.bbox
        assert 0.08 <= (x1 - x0) / size[0] <= 0.40
        assert y0 > TOP_BAND or x0 > WIDTH, "faces stay clear of the stamp"
    assert HEIGHT < TOP_BAND


def test_a_preset_whose_models_are_missing_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No LIVECAM_MODELS_DIR here (the session's private folders): nothing is downloaded,
    the usual ModelError names the files and the fetch command; no JSON is written."""
    out = tmp_path / "out.json"
    assert main(["bench", "--preset", "standard", "--frames", "5", "--json", str(out)]) == 2
    captured = capsys.readouterr()
    line = one_line_error(captured.err)
    assert "model file(s) missing" in line and "livecam models fetch" in line
    assert "det_10g" in line and "w600k_r50" in line and "inswapper_128" in line
    assert not out.exists() and captured.out == ""


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--preset", "lite", "--fp16", "on"], "has no fp16 and fp32 files"),
        (["--synthetic", "narrow", "--preset", "lite"], "--synthetic builds the standard"),
        (["--size", "big"], "size must be 480p, 720p, 1080p or WxH"),
        (["--frames", "0"], "--frames must be at least 1"),
        (["--source", "clip.mp4", "--compare", "naive"], "--compare naive runs on the synthetic"),
        (["--naive-frames", "5"], "--naive-frames applies only with --compare naive"),
        (["--compare", "naive", "--naive-frames", "0"], "--naive-frames must be at least 1"),
        (["--source", "clip.mp4", "--faces", "2"], "--faces applies only with the synthetic"),
        (["--mode", "throughput", "--fps", "60"], "--fps applies only with --mode live"),
        (["--batch", "8"], "--batch applies only with --mode throughput"),
        (["--size", "10x10"], "--size 10x10 is invalid"),
        (["--fps", "0"], "--fps 0 is invalid"),
    ],
)
def test_bad_bench_options_are_one_line_errors(
    lite_models: Path, capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    assert main(["bench", *args]) == 2
    captured = capsys.readouterr()
    assert says in one_line_error(captured.err) and captured.out == ""
