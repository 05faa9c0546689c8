"""`livecam check` on this machine's installed presets (real models), a broken preset named
with a non-zero exit (the identity oracle as the swapper file; a corrupt swapper file), bad
input as one error line; and the live swap strength in a real short `livecam run`: the
status line and --stats-json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_output import one_line_error
from conftest import other_hardware

from livecam.benchmark.synthetic_models import arcface_like, identity_swapper
from livecam.config.schema import SwapConfig
from livecam.models.presets import PRESETS, models_present
from livecam.models.store import ModelStore

ASSETS = Path(__file__).resolve().parents[2] / "assets"


def livecam(args: list[str], testdata: Path, tmp: Path) -> subprocess.CompletedProcess[str]:
    """``livecam ARGS`` with the testdata models findable (the lite preset's, until they
    ship in the package; harmless after)."""
    env = {
        **os.environ,
        "LIVECAM_MODELS_DIR": str(testdata / "models"),
        "LIVECAM_CACHE_DIR": str(tmp / "cache"),
    }
    env.pop("DISPLAY", None)
    cmd = [sys.executable, "-m", "livecam", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)


@pytest.fixture(scope="module")
def oracle(testdata: Path, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The standard preset's options with model files a user could bring: real SCRFD, a
    512-d recognizer with ArcFace's interface (real MobileFaceNet identities) and the
    identity oracle as the swapper (its output is the camera face)."""
    folder = tmp_path_factory.mktemp("oracle")
    arcface_like(folder / "arcface_like.onnx", testdata / "models" / "mobilefacenet.onnx")
    identity_swapper(folder / "identity.onnx", 128, "inswapper")
    return [
        "--preset", "standard", "--provider", "cpu",
        "--detector-model", str(testdata / "models" / "scrfd_2.5g_kps.onnx"),
        "--recognizer-model", str(folder / "arcface_like.onnx"),
    ]  # fmt: skip


def table_row(out: str, preset: str) -> list[str]:
    """The cells of ``preset``'s row of the report's table."""
    rows = [line.split() for line in out.splitlines() if line.split()[:1] == [preset]]
    assert len(rows) == 1, out
    return rows[0]


def test_every_installed_preset_passes(testdata: Path, tmp_path: Path) -> None:
    store = ModelStore(models_dir=testdata / "models", data_dir=tmp_path / "data")
    installed = [n for n, row in PRESETS.items() if models_present(row, store, SwapConfig())]
    assert "lite" in installed
    proc = livecam(["check", "--frames", "24"], testdata, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert out.startswith("livecam check | livecam ") and "onnxruntime" in out.splitlines()[0]
    for name in installed:
        row = table_row(out, name)
        assert row[-1] == "PASS", out
    lite = table_row(out, "lite")
    assert lite[1] == "cpu"  # the provider really used
    stills = [int(lite[3]), int(lite[5])]  # "68 / 66": the strength of each still
    assert all(50 <= s <= 100 for s in stills), out
    assert 50 <= int(lite[6]) <= 100 and float(lite[7]) >= 0.9  # clip strength, coverage
    assert f"check passed: {', '.join(installed)}" in out


def test_the_identity_oracle_is_named_as_broken(
    testdata: Path, tmp_path: Path, oracle: list[str]
) -> None:
    swapper = tmp_path / "identity.onnx"
    identity_swapper(swapper, 128, "inswapper")
    proc = livecam(["check", *oracle, "--swapper-model", str(swapper), "--frames", "12"],
                   testdata, tmp_path)  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    row = table_row(proc.stdout, "standard")
    assert row[1] == "cpu" and row[-1] == "FAIL"
    assert int(row[3]) < 10 and int(row[5]) < 10  # the strength of each still: near 0
    assert "standard: swap strength" in proc.stdout and "not taking" in proc.stdout
    assert proc.stdout.rstrip().endswith("check FAILED: standard")


def test_a_corrupt_swapper_file_is_named_as_broken(
    testdata: Path, tmp_path: Path, oracle: list[str]
) -> None:
    swapper = tmp_path / "inswapper_128.onnx"
    swapper.write_bytes(b"not an onnx model" * 1000)
    proc = livecam(["check", *oracle, "--swapper-model", str(swapper)], testdata, tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert table_row(proc.stdout, "standard")[-1] == "FAIL"
    assert "standard: does not build:" in proc.stdout and "inswapper_128.onnx" in proc.stdout
    assert proc.stdout.rstrip().endswith("check FAILED: standard")


def test_a_provider_fallback_fails_the_check(testdata: Path, tmp_path: Path) -> None:
    """--provider cuda on a machine where CUDA does not load: the lite preset runs on the CPU,
    which the report says, naming the library that failed."""
    proc = livecam(["check", "--preset", "lite", "--provider", "cuda", "--frames", "8"],
                   testdata, tmp_path)  # fmt: skip
    if proc.returncode == 0 and "FALLBACK" not in proc.stdout:
        other_hardware("CUDA works here: no fallback to report")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert table_row(proc.stdout, "lite")[1] == "cpu(FALLBACK)"
    assert "lite: runs on cpu, not the requested cuda: " in proc.stdout
    assert ".so" in proc.stdout  # the CUDA library that failed to load
    assert proc.stdout.rstrip().endswith("check FAILED: lite")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--preset", "nope"], "invalid choice: 'nope'"),
        (["--frames", "2"], "--frames 2 is too few"),
        (["--swapper-model", "x.onnx"], "--swapper-model needs --preset"),
        (["--preset", "standard", "--swapper-model", "no/such.onnx"], "no such file"),
    ],
)
def test_bad_input_is_one_error_line(
    testdata: Path, tmp_path: Path, args: list[str], says: str
) -> None:
    proc = livecam(["check", *args], testdata, tmp_path)
    assert proc.returncode == 2
    assert says in one_line_error(proc.stderr)


def test_a_real_run_shows_the_swap_strength(testdata: Path, tmp_path: Path) -> None:
    """The lite preset on the animated astronaut: the status line and --stats-json carry
    the swap check's reading. A run can end before a status tick carries the reading
    (off a terminal only every 5th tick is printed): the last line, printed once the
    stream has stopped, always carries it."""
    config = tmp_path / "run.toml"
    config.write_text("[run]\nstatus_interval_s = 30\n")  # no tick in this short run
    stats = tmp_path / "stats.json"
    proc = livecam(
        [
            "run", "--config", str(config), "--preset", "lite",
            "--face", str(ASSETS / "grace_hopper.jpg"),
            "--source", "synthetic", "--face-motion", str(ASSETS / "astronaut.png"),
            "--size", "320x240", "--unpaced", "--lossless", "--frames", "10",
            "--sink", "null", "--stats-json", str(stats),
        ],
        testdata,
        tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    check = json.loads(stats.read_text())["swap_check"]
    assert check is not None and check["samples"] >= 1
    assert 50 <= check["strength"] <= 100 and check["taking"] is True and not check["warning"]
    assert check["cos_source"] > check["cos_camera"]
    status = [line for line in proc.stderr.splitlines() if "latency p50/p99" in line]
    assert f"swap {check['strength']:.0f}/100" in status[-1], proc.stderr
    assert "NOT TAKING" not in proc.stderr
    assert f"swap check: strength {check['strength']:.0f}/100" in proc.stdout
