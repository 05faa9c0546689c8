"""The invisible mark and the provenance hooks of the output thread, with the real
watermark, label, recorder and C2PA signer on real frames: a swapped frame leaves marked
(after the label), a pass-through frame untouched; a mark that fails sends the frame
unmarked with one warning and the stream goes on; the recorder's manifest counts the
swapped frames the output thread sent it."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import av
import cv2
import numpy as np
import pytest
from fakes import KeepingSink

from livecam.app import swap_details
from livecam.config.schema import Config
from livecam.models.store import ModelStore
from livecam.sinks.base import Sink
from livecam.sinks.recording.provenance import Provenance, read_provenance
from livecam.sinks.recording.video import RecorderSink
from livecam.stream.label import Label
from livecam.stream.output import OutputWorker
from livecam.stream.ring import RingBuffer
from livecam.stream.watermark import Detector, Watermarker, new_session_payload
from livecam.telemetry.hub import Telemetry
from livecam.types import Event, Frame, FramePacket

MS = 1_000_000
W, H = 640, 360
#: faces_swapped of each packet: swapped, no face stage (swap off), none of its faces
SWAPPED = [1, None, 2, 0, 1, None, 1, 1]


@pytest.fixture(scope="module")
def clip(testdata: Path) -> list[Frame]:
    with av.open(str(testdata / "video" / "liveportrait_s18.mp4")) as container:
        frames: list[Frame] = []
        for picture in container.decode(video=0):
            image = cv2.resize(picture.to_ndarray(format="bgr24"), (W, H))
            frames.append(np.ascontiguousarray(image, dtype=np.uint8))
            if len(frames) == len(SWAPPED):
                return frames
    raise AssertionError("the clip is too short")


class BrokenMark(Watermarker):
    """A watermark whose embedding raises (a bug or a frame it cannot take)."""

    def embed(self, frame: Frame) -> Frame:
        raise RuntimeError("mark exploded")


def run_output(
    sinks: list[Sink],
    images: list[Frame],
    *,
    label: Label | None = None,
    watermark: Watermarker | None = None,
    counts: list[int | None] = SWAPPED,
) -> tuple[OutputWorker, list[Event]]:
    """An unpaced, lossless output thread fed ``images`` with the ``counts`` of swapped
    faces."""
    telemetry = Telemetry()
    events: list[Event] = []
    telemetry.add_listener(events.append)
    slot: RingBuffer[FramePacket] = RingBuffer(4, True)
    stop = threading.Event()
    for sink in sinks:
        sink.open(W, H, 30.0)
    worker = OutputWorker(
        sinks,
        slot,
        stop,
        telemetry,
        30.0,
        repeat=False,
        lossless=True,
        label=label,
        watermark=watermark,
    )
    worker.start()
    for seq, (image, swapped) in enumerate(zip(images, counts, strict=True)):
        packet = FramePacket(image, seq, seq * 33 * MS, faces_swapped=swapped)
        packet.t_media_ns = seq * 33 * MS
        assert slot.put(packet, timeout=10)
    slot.close()
    assert worker.finished.wait(60), "the output thread ends when the slot is closed"
    stop.set()
    worker.join(5)
    return worker, events


def test_swapped_frames_leave_marked_after_the_label_and_the_others_untouched(
    clip: list[Frame],
) -> None:
    payload = new_session_payload()
    label = Label("AI-modified")
    keep = KeepingSink()
    worker, events = run_output([keep], clip, label=label, watermark=Watermarker(payload))
    assert len(keep.kept) == len(clip)
    reference = Watermarker(payload)
    for sent, image, swapped in zip(keep.kept, clip, SWAPPED, strict=True):
        labelled = label.draw(image)
        if swapped:
            assert np.array_equal(sent, reference.embed(labelled)), "the mark goes on the label"
            found = Detector().frame(sent)
            assert found.marked and found.payload == payload
        else:
            assert np.array_equal(sent, labelled), "a pass-through frame is not marked"
            assert not Detector().frame(sent).marked
    assert worker.frames_marked == sum(1 for s in SWAPPED if s) == 5
    assert not [e for e in events if e.level != "info"]


def test_a_freeze_on_a_swapped_frame_stays_marked(clip: list[Frame]) -> None:
    """Frozen, the inference thread sends the last output frame's own array again with no
    face count (the stages did not run): still the swap's pixels, still marked."""
    swapped, camera = clip[0], clip[1]
    images = [swapped, swapped, swapped, camera, camera]  # swap, freeze x2, swap off x2
    counts: list[int | None] = [1, None, None, None, None]
    keep = KeepingSink()
    worker, _ = run_output(
        [keep], images, watermark=Watermarker(new_session_payload()), counts=counts
    )
    assert [Detector().frame(k).marked for k in keep.kept] == [True, True, True, False, False]
    assert worker.frames_marked == 3


def test_a_mark_that_fails_sends_the_frame_unmarked_with_one_warning(
    clip: list[Frame], caplog: pytest.LogCaptureFixture
) -> None:
    keep = KeepingSink()
    with caplog.at_level(logging.WARNING, logger="livecam.stream.output"):
        worker, events = run_output([keep], clip, watermark=BrokenMark(new_session_payload()))
    assert [k.tobytes() for k in keep.kept] == [c.tobytes() for c in clip], "all, unmarked"
    assert worker.mark_failures == 5 and worker.frames_marked == 0
    warnings = [e for e in events if e.level == "warning"]
    assert len(warnings) == 1 and warnings[0].origin == "watermark"
    assert "mark exploded" in warnings[0].message
    records = [r for r in caplog.records if r.name == "livecam.stream.output"]
    assert len(records) == 1 and "unmarked" in records[0].getMessage()
    assert worker.failure is None, "the stream and its sinks went on"


def test_the_recorders_manifest_counts_the_swapped_frames_it_was_sent(
    clip: list[Frame], tmp_path: Path
) -> None:
    cfg = Config.from_dict({"source": {"spec": "camera:0"}, "pipeline": {"stages": ["swap"]}})
    store = ModelStore()
    provenance = Provenance(lambda: swap_details(cfg, store), key_folder=tmp_path / "key")
    payload = new_session_payload()
    provenance.mark_session = payload.session_id
    recorder = RecorderSink(tmp_path / "out.mp4", provenance=provenance)
    run_output([recorder], clip, watermark=Watermarker(payload))
    assert recorder.frames_written == len(clip) and recorder.frames_swapped == 5
    report = read_provenance(tmp_path / "out.mp4")
    assert report.signature_valid and report.ai_action is not None
    with av.open(str(tmp_path / "out.mp4")) as container:
        decoded = [f.to_ndarray(format="bgr24") for f in container.decode(video=0)]
    marked = [Detector().frame(np.ascontiguousarray(f)).marked for f in decoded]
    # every swapped frame keeps its mark through H.264 (an unswapped frame between marked
    # ones may inherit it: inter prediction copies the reference's texture)
    assert all(m for m, s in zip(marked, SWAPPED, strict=True) if s), marked
