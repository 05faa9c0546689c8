"""The cached dynamic-batch rewrites are trusted only as far as their integrity record:
the lite preset's real models (bundled slim-160 and MobileFaceNet) rewritten into a
private cache, one of them zeroed in place with its size and mtime kept, then loaded again
and checked by `livecam models verify`."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from face_parts_data import read_color

from livecam.config.schema import SwapConfig
from livecam.face.build import build_parts
from livecam.face.source.analysis import FaceAnalyzer
from livecam.models.presets import PRESETS
from livecam.models.store import ModelStore
from livecam.runtime.batch_rewrite import check_cache, make_dynamic_batch, record_path

PORTRAIT = "obama_official_portrait_2012.jpg"


def zero_weights_in_place(path: Path) -> None:
    """Every initializer of the ONNX file ``path`` set to zeros, written over the same
    bytes: the size stays, the mtime is put back (what bit rot or a bad ``cp -p`` leaves
    behind). The kernel stamps ctime with a coarse clock: the write is repeated until ctime
    has moved, as it does on any later write."""
    before = path.stat()
    model = onnx.load(str(path))
    for init in model.graph.initializer:
        if init.raw_data:
            init.raw_data = bytes(len(init.raw_data))
    data = model.SerializeToString()
    assert len(data) == before.st_size  # zeros of the same length: the same framing
    while True:
        with path.open("r+b") as f:
            f.write(data)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        if path.stat().st_ctime_ns != before.st_ctime_ns:
            break
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


def _landmarks(testdata: Path) -> np.ndarray:
    """The lite preset's 68 points on the portrait (parts built now, from the cache)."""
    parts = build_parts(PRESETS["lite"], SwapConfig.of(provider="cpu"), ModelStore())
    try:
        analyzer = FaceAnalyzer(parts.photo_detector, parts.landmarker, None)
        (face,) = analyzer.analyze(read_color(testdata / "faces" / PORTRAIT))
        assert face.landmarks is not None
        return face.landmarks
    finally:
        parts.close()


def _spread(points: np.ndarray) -> float:
    """Mean distance of the points from their centre (zeroed weights put them in one spot)."""
    return float(np.linalg.norm(points - points.mean(axis=0), axis=1).mean())


def test_a_zeroed_cached_rewrite_is_rebuilt_with_one_warning_and_landmarks_come_back(
    testdata: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("LIVECAM_CACHE_DIR", str(tmp_path))
    first = _landmarks(testdata)
    assert _spread(first) > 20  # a face of ~250 px: points over the whole face
    (slim,) = (tmp_path / "onnx").glob("slim_160_latest.*.dynbatch.onnx")
    record = json.loads(record_path(slim).read_text())
    good = slim.read_bytes()
    assert record["sha256"] == hashlib.sha256(good).hexdigest()
    assert record["source"] == "slim_160_latest.onnx" and len(record["source_sha256"]) == 64

    zero_weights_in_place(slim)
    found = dict(check_cache(tmp_path / "onnx"))
    assert len(found) == 2 and "is corrupt" in str(found[slim])
    assert all(why is None for path, why in found.items() if path != slim)  # MobileFaceNet's
    # `livecam models verify` names the corrupt rewrite and exits 1
    from livecam.cli.main import main

    assert main(["models", "verify", "slim-68"]) == 1
    out = capsys.readouterr().out
    assert f"BAD  cached rewrite: {slim} is corrupt (sha256 " in out
    assert "1 bad cached rewrite(s)" in out and "ok   slim-68: " in out

    with caplog.at_level(logging.WARNING, logger="livecam.runtime.batch_rewrite"):
        again = _landmarks(testdata)
    (warning,) = [r.getMessage() for r in caplog.records if "rebuilding" in r.getMessage()]
    assert f"the cached rewrite {slim} is corrupt" in warning
    assert slim.read_bytes() == good  # rebuilt: the same verified rewrite
    np.testing.assert_allclose(again, first, atol=1e-3)
    assert main(["models", "verify", "slim-68", "mobilefacenet"]) == 0
    out = capsys.readouterr().out
    assert f"ok   cached rewrite: {slim}" in out and "BAD" not in out
    assert out.count("ok   cached rewrite: ") == 2  # slim-160's and MobileFaceNet's


def _stream(testdata: Path, stats: Path) -> dict[str, int]:
    """`livecam run` of the lite preset over 20 frames of a real talking-head clip."""
    from livecam.cli.main import main

    clip = testdata / "video" / "liveportrait_d6.mp4"
    face = testdata / "faces" / PORTRAIT
    args = ["run", "--source", str(clip), "--frames", "20", "--unpaced", "--sink", "null"]
    assert main([*args, "--face", str(face), "--stats-json", str(stats), "--quiet"]) == 0
    summary = json.loads(stats.read_text())
    return {k: summary[k] for k in ("frames_in", "faces_detected", "frames_swapped")}


def test_the_stream_swaps_every_frame_again_after_its_cached_landmarker_was_zeroed(
    testdata: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("LIVECAM_CACHE_DIR", str(tmp_path / "cache"))
    assert _stream(testdata, tmp_path / "first.json") == {
        "frames_in": 20,
        "faces_detected": 20,
        "frames_swapped": 20,
    }
    (slim,) = (tmp_path / "cache" / "onnx").glob("slim_160_latest.*.dynbatch.onnx")
    zero_weights_in_place(slim)  # used as it is, no face passes the landmark check: 0 of 20
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="livecam.runtime.batch_rewrite"):
        assert _stream(testdata, tmp_path / "again.json")["frames_swapped"] == 20
    (warning,) = [r.getMessage() for r in caplog.records if r.name.endswith("batch_rewrite")]
    assert f"the cached rewrite {slim} is corrupt" in warning and "rebuilding it" in warning


def test_a_rewrite_without_its_record_or_from_another_source_is_rebuilt(
    testdata: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    source = testdata / "models" / "mobilefacenet.onnx"
    path = make_dynamic_batch(source, tmp_path)
    assert path is not None and path.parent == tmp_path
    record_path(path).unlink()  # a cache from before records existed, or a crash between
    with caplog.at_level(logging.WARNING, logger="livecam.runtime.batch_rewrite"):
        assert make_dynamic_batch(source, tmp_path) == path
    assert "has no integrity record" in caplog.text and record_path(path).is_file()
    caplog.clear()

    # a record naming another source (its first 16 hex collide with this one's)
    record = json.loads(record_path(path).read_text())
    record["source_sha256"] = record["source_sha256"][:16] + "0" * 48
    record_path(path).write_text(json.dumps(record))
    with caplog.at_level(logging.WARNING, logger="livecam.runtime.batch_rewrite"):
        assert make_dynamic_batch(source, tmp_path) == path
    assert "was made from another file" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="livecam.runtime.batch_rewrite"):
        assert make_dynamic_batch(source, tmp_path) == path  # trusted again: no warning
    assert not caplog.records
    assert check_cache(tmp_path) == [(path, None)]


def test_a_model_corrupted_in_place_is_found_by_a_new_process(
    testdata: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "models"
    folder.mkdir()
    copy = folder / "mobilefacenet.onnx"
    copy.write_bytes((testdata / "models" / "mobilefacenet.onnx").read_bytes())
    store = ModelStore(models_dir=folder, data_dir=tmp_path / "data")
    assert store.find("mobilefacenet") == (copy, [])
    zero_weights_in_place(copy)
    # the same store (a live change in this process): the state key has moved (ctime)
    path, bad = store.find("mobilefacenet")
    assert path != copy and bad and "sha256" in bad[0]
    # a new process hashes every file it loads at least once
    env = {**os.environ, "LIVECAM_MODELS_DIR": str(folder)}
    code = (
        "from livecam.models.store import ModelStore; "
        "path, bad = ModelStore().find('mobilefacenet'); print(path); print(bad)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert str(copy) not in proc.stdout.splitlines()[0]  # passed over: the bundled copy
    assert f"{copy}: sha256 " in proc.stdout and "expected" in proc.stdout


def test_a_cache_folder_that_cannot_be_written_costs_the_batch_not_the_run(
    testdata: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "file").write_text("a file where the cache folder should be")
    cache = tmp_path / "file" / "onnx"
    with caplog.at_level(logging.WARNING, logger="livecam.runtime.batch_rewrite"):
        assert make_dynamic_batch(testdata / "models" / "mobilefacenet.onnx", cache) is None
    [warning] = [r.getMessage() for r in caplog.records]
    assert f"LiveCam's cache folder {cache} cannot be written (Not a directory)" in warning
    assert "mobilefacenet.onnx keeps its fixed batch" in warning and "LIVECAM_CACHE_DIR" in warning
