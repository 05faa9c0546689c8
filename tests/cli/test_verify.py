"""`livecam verify` on real files made by the real pipeline: `livecam run` and the demo
mark by default (verify finds the mark in the frames and the signed C2PA manifest, exit
0); unmarked testdata clips and photos are not marked (exit 1); corrupt files and missing
devices are bad input (exit 2, one `error:` line); a camera stream (an HTTP stream, the
device path) is verified from its frames; the mark is off only through the config field,
with one warning naming EU AI Act Article 50."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import av
import pytest
from cli_output import subcommand_parser
from http_files import FileServer

from livecam.cli import verify as verify_command
from livecam.cli.main import main as cli_main
from livecam.sinks.recording.provenance import read_provenance
from livecam.stream.verify import mark_text
from livecam.stream.verify import verify as verify_file
from livecam.stream.watermark import StreamDetection

FRAMES = 16


@pytest.fixture(scope="module")
def clip(testdata: Path) -> Path:
    return testdata / "video" / "liveportrait_d6.mp4"


@pytest.fixture(scope="module")
def photo(testdata: Path) -> Path:
    return testdata / "faces" / "grace_hopper_navy_portrait.jpg"


def run(source: Path, photo: Path, sink: Path, *extra: str) -> list[str]:
    return [
        "run",
        "--source",
        str(source),
        "--face",
        str(photo),
        "--sink",
        str(sink),
        "--frames",
        str(FRAMES),
        "--quiet",
        *extra,
    ]


@pytest.fixture(scope="module")
def marked(clip: Path, photo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A recording of `livecam run` with its defaults (the lite preset, mark on)."""
    out = tmp_path_factory.mktemp("run") / "call.mp4"
    assert cli_main(run(clip, photo, out)) == 0
    return out


def verify(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli_main(["verify", *args])
    out, err = capsys.readouterr()
    return code, out, err


def mark_counts(out: str) -> tuple[int, int]:
    found = re.search(
        r"invisible mark: (?:FOUND in|not found \(in|too weak: seen in only) (\d+) of (\d+) frames",
        out,
    )
    assert found, out
    return int(found[1]), int(found[2])


def test_livecam_run_marks_by_default_and_verify_finds_the_mark_and_the_manifest(
    marked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = verify(capsys, str(marked))
    assert code == 0 and not err, out + err
    hits, total = mark_counts(out)
    assert total == FRAMES and hits >= 0.9 * total, out
    session = re.search(r"payload: LiveCam mark v1, session ([0-9a-f]{8})", out)
    assert session, out
    assert "C2PA manifest: present, signature valid" in out and "self-signed" in out
    assert "AI action: c2pa.edited (compositeWithTrainedAlgorithmicMedia)" in out
    assert f"session {session[1]} (the one found)" in out  # the manifest names this mark
    assert "preset lite" in out and "mobilefacenet (sha256 " in out
    assert out.rstrip().endswith("verdict: MARKED as AI-modified")


def test_unmarked_testdata_clips_and_photos_are_not_marked(
    clip: Path, testdata: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = verify(capsys, str(clip), "--frames", "60")
    assert code == 1, out
    assert mark_counts(out) == (0, 60)
    assert "provenance: none (no C2PA manifest)" in out and "NOT marked" in out
    for name in ("obama_speech_2009.jpg", "codait_bryan.png"):
        code, out, _ = verify(capsys, str(testdata / "faces" / name))
        assert code == 1 and mark_counts(out) == (0, 1), out


def test_corrupt_files_and_missing_inputs_are_bad_input_in_one_line(
    marked: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "garbage.mp4").write_bytes(b"not a video at all " * 50)
    (tmp_path / "cut.mp4").write_bytes(marked.read_bytes()[:4096])  # its index is gone
    (tmp_path / "garbage.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 100)
    (tmp_path / "empty.jpg").write_bytes(b"")
    (tmp_path / "folder").mkdir()
    cases = {
        "garbage.mp4": "invalid data",
        "cut.mp4": "cannot read",
        "garbage.png": "not a readable image",
        "empty.jpg": "not a readable image",
        "folder": "is not a file",
        "missing.mp4": "no such file or device",
    }
    for name, why in cases.items():
        code, out, err = verify(capsys, str(tmp_path / name))
        assert code == 2 and not out, (name, out)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: verify: "), (name, err)
        assert why in lines[0] and "Traceback" not in err, (name, err)
    code, _, err = verify(capsys, "camera:7")  # no such camera here
    assert code == 2 and len(err.strip().splitlines()) == 1 and err.startswith("error: ")


def test_a_damaged_download_is_verified_on_the_frames_that_still_decode(
    marked: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A call recording cut short (remuxed to Matroska, its last third gone): the frames
    before the cut still carry the mark."""
    whole = tmp_path / "call.mkv"
    with av.open(str(marked)) as inp, av.open(str(whole), "w", format="matroska") as dst:
        stream = dst.add_stream_from_template(inp.streams.video[0])
        for packet in inp.demux(inp.streams.video[0]):
            if packet.size:
                packet.stream = stream
                dst.mux(packet)
    cut = tmp_path / "cut.mkv"
    data = whole.read_bytes()
    cut.write_bytes(data[: len(data) * 2 // 3])
    code, out, err = verify(capsys, str(cut))
    assert code == 0, out + err
    hits, total = mark_counts(out)
    assert 0 < total < FRAMES and hits >= 0.9 * total, out
    assert "provenance: none" in out  # a remux drops the manifest: the mark remains


def test_a_camera_stream_is_verified_from_its_frames(
    marked: Path, server: FileServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """The device path (what a viewer points at a virtual camera): a stream URL read
    through the camera source."""
    url = server.add("/live.mp4", marked.read_bytes())
    code, out, err = verify(capsys, url, "--frames", "12")
    assert code == 0, out + err
    assert "(camera)" in out and "a live camera carries no manifest" in out
    hits, total = mark_counts(out)
    assert total == 12 and hits >= 11, out


@pytest.fixture(scope="module")
def still(testdata: Path, photo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A still of `livecam run` (marked and signed)."""
    still = tmp_path_factory.mktemp("still") / "still.png"
    target = testdata / "faces" / "obama_official_portrait_2012.jpg"
    assert cli_main(run(target, photo, still)) == 0
    return still


def test_a_still_of_the_pipeline_is_marked_and_signed(
    still: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = verify(capsys, str(still))
    assert code == 0 and mark_counts(out) == (1, 1), out
    assert "signature valid" in out and "c2pa.edited" in out


def changed(path: Path, at: int, to: Path) -> Path:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    to.write_bytes(bytes(data))
    return to


def test_a_png_whose_pixels_do_not_decode_still_reports_its_manifest(
    still: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """One bit changed in the pixels: libpng refuses them (its own line never reaches the
    terminal; its reason is the note: a CRC error, or what zlib or the filter meets first,
    which depends on the frame's random session mark), the
    manifest's signature still checks out but its hash does not match."""
    data = still.read_bytes()
    broken = changed(still, data.index(b"IDAT") + 200, tmp_path / "pixels.png")
    capfd.readouterr()
    code = cli_main(["verify", str(broken)])
    out, err = capfd.readouterr()
    assert code == 2 and not err, out + err  # the mark cannot be checked
    assert "invisible mark: not checked (no frame decodes)" in out, out
    assert re.search(r"note: not a readable image \([^)\n]+\)", out), out  # libpng's reason
    assert "C2PA manifest: present, signature valid; the content does NOT match" in out, out
    assert "assertion.dataHash.mismatch" in out and "AI action: c2pa.edited" in out, out
    assert "libpng" not in out and "verdict: UNKNOWN: no frame decodes" in out


def test_a_broken_signature_is_told_apart_from_changed_content(
    still: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = still.read_bytes()
    signature = data.index(b"c2pa.signature")
    for offset in range(100, 1500, 100):  # a byte of the signed claim, not of the frame
        code, out, _ = verify(capsys, str(changed(still, signature + offset, tmp_path / "s.png")))
        if "claimSignature.mismatch" in out:
            break
    else:
        raise AssertionError("no changed byte broke the claim's signature")
    assert code == 0 and mark_counts(out) == (1, 1), out  # the frame still carries the mark
    assert "C2PA manifest: present, signature INVALID; signature check FAILED" in out, out
    assert "does NOT match" not in out


def test_a_mark_seen_in_too_few_frames_is_called_too_weak() -> None:
    weak = StreamDetection(150, 52, 3, 0, None, False)
    assert mark_text(weak, 60) == (
        "too weak: seen in only 52 of 150 frames, in none of the 3 windows of 60 frames in "
        "more than half its frames (not counted as marked)"
    )
    assert mark_text(StreamDetection(150, 0, 3, 0, None, False), 60) == (
        "not found (in 0 of 150 frames)"
    )


def test_the_demo_marks_by_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_file = tmp_path / "demo.mp4"
    assert cli_main(["demo", "--output", str(out_file), "--frames", "20", "--no-window"]) == 0
    code, out, _ = verify(capsys, str(out_file))
    assert code == 0, out
    hits, total = mark_counts(out)
    assert total == 20 and hits >= 18, out
    assert read_provenance(out_file).ai_action is not None


def test_the_mark_is_off_only_through_the_config_field_with_an_article_50_warning(
    clip: Path,
    photo: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert "watermark" not in subcommand_parser("run").format_help()  # no option
    for option in ("--no-watermark", "--watermark"):
        assert cli_main(["run", option, "--source", "synthetic", "--frames", "1"]) == 2
    config = tmp_path / "off.toml"
    config.write_text("[output]\nwatermark = false\n")
    out_file = tmp_path / "unmarked.mp4"
    with caplog.at_level(logging.WARNING):
        assert cli_main([*run(clip, photo, out_file), "--config", str(config)]) == 0
    warned = [r.getMessage() for r in caplog.records if "Article 50" in r.getMessage()]
    assert len(warned) == 1 and "\n" not in warned[0] and "EU AI Act" in warned[0]
    assert "output.watermark is false" in warned[0]
    code, out, _ = verify(capsys, str(out_file))
    assert mark_counts(out)[0] == 0, out  # the frames carry no mark ...
    assert code == 0 and "it names the mark" not in out  # ... the signed manifest remains

    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert cli_main(run(clip, photo, tmp_path / "default.mp4")) == 0
    assert not [r for r in caplog.records if "Article 50" in r.getMessage()]


def test_a_long_verify_shows_its_progress(
    marked: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """The C2PA check hashes the whole file (minutes for 20 GB): its bytes and the frames
    looked at are followed to the end; the bars show once a part has run a while (here at
    once)."""
    seen: dict[str, tuple[int, int]] = {}
    verify_file(str(marked), progress=lambda what, done, total: seen.update({what: (done, total)}))
    size = marked.stat().st_size
    assert seen == {"bytes": (size, size), "frames": (FRAMES, FRAMES)}, seen
    monkeypatch.setattr(verify_command, "SHOW_AFTER_S", 0.0)
    capfd.readouterr()
    assert cli_main(["verify", str(marked)]) == 0
    err = capfd.readouterr().err
    assert "checking the C2PA hashes:" in err and "looking for the mark:" in err, err
