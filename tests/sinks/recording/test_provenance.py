"""Signed provenance of recordings and stills, written by the real sinks and read back
with c2pa's own Reader: the AI edit (c2pa.edited, IPTC compositeWithTrainedAlgorithmicMedia),
the preset and the models with the sha256 of the files on disk, never the source photo;
stills too; .mkv gets the container tag; the user's key is made once with mode 0600; a
changed byte breaks the signature; a file is never lost when signing fails."""

from __future__ import annotations

import hashlib
import json
import logging
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import av
import c2pa
import cv2
import numpy as np
import pytest
from cryptography import x509
from unprivileged import obeying_permissions

from livecam.app import swap_details
from livecam.config.schema import Config
from livecam.models.store import ModelStore
from livecam.sinks.recording.image import ImageWriterSink
from livecam.sinks.recording.provenance import (
    AI_ACTION,
    AI_SOURCE_TYPE,
    IPTC,
    KEY_FILE,
    TAG_KEY,
    Provenance,
    ProvenanceError,
    SwapDetails,
    read_provenance,
    user_signing_key,
)
from livecam.sinks.recording.video import RecorderSink
from livecam.types import Frame

FRAMES = 8


@pytest.fixture(scope="module")
def clip(testdata: Path) -> list[Frame]:
    """The first frames of a real talking-head clip, at 320x320."""
    with av.open(str(testdata / "video" / "liveportrait_d6.mp4")) as container:
        frames: list[Frame] = []
        for picture in container.decode(video=0):
            image = cv2.resize(picture.to_ndarray(format="bgr24"), (320, 320))
            frames.append(np.ascontiguousarray(image, dtype=np.uint8))
            if len(frames) == FRAMES:
                return frames
    raise AssertionError("the clip is too short")


@pytest.fixture
def photo(testdata: Path) -> Path:
    return testdata / "faces" / "grace_hopper_navy_portrait.jpg"


@pytest.fixture
def lite(photo: Path) -> Config:
    """A camera run of the lite preset with a source photo."""
    return Config.from_dict(
        {
            "source": {"spec": "camera:0"},
            "pipeline": {"stages": ["swap"]},
            "swap": {"preset": "lite", "face": str(photo)},
        }
    )


@pytest.fixture
def provenance(lite: Config, tmp_path: Path) -> Provenance:
    store = ModelStore()
    return Provenance(lambda: swap_details(lite, store), key_folder=tmp_path / "key")


def record(
    sink: RecorderSink | ImageWriterSink,
    provenance: Provenance,
    frames: list[Frame],
    swapped: list[bool],
) -> Path:
    """Drive ``sink`` as the output thread does: each frame sent with whether the swap
    changed it."""
    h, w = frames[0].shape[:2]
    sink.open(w, h, 30.0)
    for i, (frame, changed) in enumerate(zip(frames, swapped, strict=True)):
        sink.send(frame, i * 33_333_333, changed)
    sink.close()
    assert sink.written is not None
    return sink.written


def c2pa_store(path: Path) -> dict[str, Any]:
    """The manifest store as c2pa's Reader gives it."""
    with c2pa.Reader(str(path)) as reader:
        data: dict[str, Any] = json.loads(reader.json())
    return data


def active(store: dict[str, Any]) -> dict[str, Any]:
    manifest: dict[str, Any] = store["manifests"][store["active_manifest"]]
    return manifest


def actions(store: dict[str, Any]) -> list[dict[str, Any]]:
    found = [
        a
        for assertion in active(store)["assertions"]
        if assertion["label"].startswith("c2pa.actions")
        for a in assertion["data"]["actions"]
    ]
    return found


def failures(store: dict[str, Any]) -> set[str]:
    results = store["validation_results"]["activeManifest"]
    return {f["code"] for f in results.get("failure", [])}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def decoded_frames(path: Path) -> int:
    with av.open(str(path)) as container:
        return sum(1 for _ in container.decode(video=0))


@pytest.mark.parametrize("suffix", [".mp4", ".mov", ".avi"])
def test_a_recordings_manifest_read_back_by_c2pa_declares_the_ai_edit_and_the_model_hashes(
    suffix: str, clip: list[Frame], provenance: Provenance, photo: Path, tmp_path: Path
) -> None:
    swapped = [i % 4 != 0 for i in range(FRAMES)]  # 6 of 8 frames changed by the swap
    sink = RecorderSink(tmp_path / f"rec{suffix}", provenance=provenance)
    path = record(sink, provenance, clip, swapped)

    store = c2pa_store(path)
    assert store["validation_state"] in ("Valid", "Trusted")
    assert failures(store) <= {"signingCredential.untrusted"}  # self-signed, nothing else
    created, edited = actions(store)
    assert (created["action"], created["digitalSourceType"]) == ("c2pa.created", AI_SOURCE_TYPE)
    assert edited["action"] == AI_ACTION == "c2pa.edited"
    assert edited["digitalSourceType"] == (
        "http://cv.iptc.org/newscodes/digitalsourcetype/compositeWithTrainedAlgorithmicMedia"
    )
    params = edited["parameters"]
    assert params["preset"] == "lite"
    assert (params["frames"], params["frames_swapped"]) == (FRAMES, 6)
    models = {m["role"]: m for m in params["models"]}
    assert set(models) == {"detector", "landmarker", "recognizer", "swapper"}
    assert models["swapper"] == {"role": "swapper", "name": "classic-mesh"}  # no weights
    store_files = ModelStore()
    for role in ("detector", "landmarker", "recognizer"):
        on_disk = store_files.locate(models[role]["name"])
        assert on_disk is not None and on_disk.name == models[role]["file"]
        assert models[role]["sha256"] == sha256(on_disk), role
    text = json.dumps(store)
    assert photo.name not in text and photo.stem not in text  # never the source photo
    assert sha256(photo) not in text
    assert active(store)["signature_info"]["alg"].lower() == "es256"
    assert decoded_frames(path) == sink.frames_written == FRAMES  # still plays, whole
    assert sink.provenance_kind == "signed C2PA manifest"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []

    report = read_provenance(path)
    assert report.present and report.signature_valid and not report.trusted
    assert report.ai_action == "c2pa.edited (compositeWithTrainedAlgorithmicMedia)"
    assert report.preset == "lite" and len(report.models) == 4
    assert "self-signed" in report.detail


@pytest.mark.parametrize("suffix", [".png", ".jpg"])
def test_a_still_is_signed_and_says_whether_its_frame_was_swapped(
    suffix: str, clip: list[Frame], provenance: Provenance, tmp_path: Path
) -> None:
    sink = ImageWriterSink(tmp_path / f"still{suffix}", provenance=provenance)
    path = record(sink, provenance, clip[:2], [False, True])  # the kept frame: swapped
    store = c2pa_store(path)
    assert failures(store) <= {"signingCredential.untrusted"}
    kinds = [(a["action"], a["digitalSourceType"]) for a in actions(store)]
    assert kinds == [("c2pa.created", AI_SOURCE_TYPE), ("c2pa.edited", AI_SOURCE_TYPE)]
    assert {m["name"] for m in actions(store)[1]["parameters"]["models"]} >= {"mobilefacenet"}
    image = cv2.imread(str(path))
    assert image is not None and image.shape == clip[1].shape
    if suffix == ".png":  # the manifest sits beside the pixels, it changes none of them
        assert np.array_equal(image, clip[1])
    assert sink.signed

    unswapped = ImageWriterSink(tmp_path / f"camera{suffix}", provenance=provenance)
    path = record(unswapped, provenance, clip[:2], [True, False])  # the kept frame: not
    kinds = [(a["action"], a["digitalSourceType"]) for a in actions(c2pa_store(path))]
    assert kinds == [("c2pa.created", IPTC + "digitalCapture")]  # a camera, no AI edit
    report = read_provenance(path)
    assert report.present and report.signature_valid and report.ai_action is None


def test_an_mkv_recording_gets_the_container_tag_and_keeps_every_frame(
    clip: list[Frame], provenance: Provenance, tmp_path: Path
) -> None:
    sink = RecorderSink(tmp_path / "rec.mkv", provenance=provenance)
    path = record(sink, provenance, clip, [True] * FRAMES)
    with av.open(str(path)) as container:
        tag = json.loads(container.metadata[TAG_KEY])
    assert tag["action"] == "c2pa.edited" and tag["digitalSourceType"] == AI_SOURCE_TYPE
    assert tag["preset"] == "lite" and tag["frames_swapped"] == FRAMES
    assert tag["signed"] is False
    assert {m["name"] for m in tag["models"]} >= {"yunet-2023mar", "classic-mesh"}
    assert decoded_frames(path) == FRAMES
    report = read_provenance(path)
    assert (report.kind, report.present, report.signature_valid) == ("tag", True, False)
    assert report.ai_action == "c2pa.edited (compositeWithTrainedAlgorithmicMedia)"


def test_the_signing_key_is_made_once_per_user_private_and_self_signed(
    clip: list[Frame], lite: Config, tmp_path: Path
) -> None:
    folder = tmp_path / "key"
    key = user_signing_key(folder)
    assert stat.S_IMODE((folder / KEY_FILE).stat().st_mode) == 0o600
    assert user_signing_key(folder).key_pem == key.key_pem  # kept, not made again
    signer, root = x509.load_pem_x509_certificates(key.chain_pem)
    assert root.issuer == root.subject  # a self-signed root ...
    assert signer.issuer == root.subject and signer.issuer != signer.subject  # ... issued it
    assert "self-signed" in root.subject.rfc4514_string()

    serials = set()
    for name in ("a.png", "b.png"):  # two sessions, one key
        session = Provenance(lambda: swap_details(lite, ModelStore()), key_folder=folder)
        path = record(
            ImageWriterSink(tmp_path / name, provenance=session), session, clip, [True] * FRAMES
        )
        serials.add(active(c2pa_store(path))["signature_info"]["cert_serial_number"])
    assert serials == {str(signer.serial_number)}


KEY_READER = """
import sys
from pathlib import Path
from livecam.sinks.recording.provenance import ProvenanceError, user_signing_key
try:
    user_signing_key(Path(sys.argv[1]))
except ProvenanceError as e:
    print(e.message)
"""


def test_a_signing_key_that_cannot_be_read_is_never_replaced(tmp_path: Path) -> None:
    """No permission to read the key is not damage: the user's signing identity is kept
    and the error names it (it used to be replaced by a new key, the old one gone)."""
    folder = tmp_path / "key"
    key = user_signing_key(folder)
    (folder / KEY_FILE).chmod(0)
    done = subprocess.run(
        [sys.executable, "-c", KEY_READER, str(folder)],
        preexec_fn=obeying_permissions(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    (folder / KEY_FILE).chmod(0o600)
    assert done.returncode == 0, done.stderr
    assert f"{folder / KEY_FILE} cannot be read (Permission denied); it is kept" in done.stdout
    assert (folder / KEY_FILE).read_bytes() == key.key_pem + key.chain_pem
    assert sorted(p.name for p in folder.iterdir()) == [KEY_FILE]


def test_a_key_folder_that_cannot_be_made_is_named_with_its_fix(tmp_path: Path) -> None:
    """A file where the key's folder should be: the error names that folder and the
    file in the way (it used to say the key, which never existed, "cannot be read; it is
    kept", and told the user to chmod it)."""
    (tmp_path / "data").write_bytes(b"not a folder")
    folder = tmp_path / "data" / "signing"
    with pytest.raises(ProvenanceError) as raised:
        user_signing_key(folder)
    said = raised.value.message
    assert said == f"the C2PA signing key cannot be written to {folder} (Not a directory)", said
    assert raised.value.hint == f"move away the file that stands in the path of {folder}"
    assert (tmp_path / "data").read_bytes() == b"not a folder"


def test_a_damaged_signing_key_is_kept_aside_before_a_new_one_is_made(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "key"
    folder.mkdir()
    (folder / KEY_FILE).write_bytes(b"-----BEGIN PRIVATE KEY-----\ngarbage\n")
    with caplog.at_level(logging.WARNING):
        key = user_signing_key(folder)
    [aside] = [p for p in folder.iterdir() if p.name != KEY_FILE]
    assert aside.name.startswith(f"{KEY_FILE}.bad-") and str(aside) in caplog.text
    assert aside.read_bytes() == b"-----BEGIN PRIVATE KEY-----\ngarbage\n"
    assert user_signing_key(folder).key_pem == key.key_pem


def test_a_changed_byte_breaks_the_signature(
    clip: list[Frame], provenance: Provenance, tmp_path: Path
) -> None:
    path = record(
        RecorderSink(tmp_path / "rec.mp4", provenance=provenance), provenance, clip, [True] * FRAMES
    )
    assert read_provenance(path).signature_valid
    data = bytearray(path.read_bytes())
    at = data.find(b"mdat") + 64  # inside the coded frames
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))
    report = read_provenance(path)
    assert report.present and not report.signature_valid
    assert any("mismatch" in code for code in report.failures), report.failures
    # the signature itself checks out: the content no longer matches what it signed
    assert report.signature_checked and "does NOT match the signed hashes" in report.detail


def test_a_recording_whose_signing_fails_is_kept_unsigned_with_a_warning(
    clip: list[Frame], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def broken() -> SwapDetails:
        raise RuntimeError("no preset table")

    session = Provenance(broken, key_folder=tmp_path / "key")
    sink = RecorderSink(tmp_path / "rec.mp4", provenance=session)
    with caplog.at_level(logging.WARNING):
        path = record(sink, session, clip, [True] * FRAMES)
    assert decoded_frames(path) == FRAMES  # the user's recording is not lost
    assert not read_provenance(path).present and sink.provenance_kind is None
    assert "WITHOUT signed provenance" in caplog.text and "no preset table" in caplog.text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rec.mp4"]  # no temp file left


def test_a_converted_file_with_no_swapped_frame_states_nothing(
    clip: list[Frame], tmp_path: Path
) -> None:
    """Its origin is not LiveCam's to state: no manifest at all (a camera's would say
    digitalCapture)."""
    cfg = Config.from_dict({"source": {"spec": str(tmp_path / "in.mp4")}})
    details = swap_details(cfg, ModelStore())
    assert details.preset is None and details.source_type is None
    session = Provenance(lambda: details, key_folder=tmp_path / "key")
    sink = RecorderSink(tmp_path / "rec.mp4", provenance=session)
    path = record(sink, session, clip, [False] * FRAMES)
    assert not read_provenance(path).present and sink.provenance_kind is None
    assert decoded_frames(path) == FRAMES


def test_a_model_file_given_by_path_is_named_by_its_file_and_its_own_hash(
    lite: Config, testdata: Path
) -> None:
    given = testdata / "models" / "yunet_s_dynamic.onnx"
    cfg = lite.with_section("swap", detector_model=str(given))
    models = {m.role: m for m in swap_details(cfg, ModelStore()).models}
    assert (models["detector"].name, models["detector"].file) == (given.name, given.name)
    assert models["detector"].sha256 == sha256(given)
    assert models["recognizer"].name == "mobilefacenet"  # the preset's own, unchanged
