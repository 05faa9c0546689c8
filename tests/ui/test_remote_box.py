"""The Processing tab's Remote box: the server and token go to ``[remote]`` for the next
start, a malformed URL is one red line that changes nothing, and the state line says
where the swap runs, or REMOTE LOST in red while the local swap stands in."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot
from synthetic_stream import SYNTHETIC, small_config
from triton_serve import TOKEN, Served

from livecam.config.schema import Config
from livecam.remote.swapper import LOST, RemoteStats
from livecam.telemetry.snapshot import Snapshot
from ui.main_window import MainWindow
from ui.notice import ERROR_TEXT_STYLE
from ui.panels.processing_panel import ProcessingPanel
from ui.panels.remote_box import OFF_TEXT, RemoteBox, state_text
from ui.panels.stats_panel import StatsPanel
from ui.settings import UiSettings
from ui.stream import StreamController

TIMEOUT_MS = 60000


def stats(lost: str | None) -> RemoteStats:
    return RemoteStats(
        address="grpc://127.0.0.1:8001",
        route="local" if lost else "remote",
        lost=lost,
        rtt_p50_ms=4.0,
        rtt_p99_ms=9.0,
        bytes_up_per_frame=51200.0,
        bytes_down_per_frame=49152.0,
        bytes_up_per_face=51200.0,
        bytes_down_per_face=49152.0,
        faces_remote=10,
        faces_local=0,
        late=0,
        skipped=0,
        sent=10,
        mean_batch=1.5,
        server="cuda on NVIDIA H200",
    )


def snapshot(lost: str | None) -> Snapshot:
    return Snapshot(
        elapsed_s=1.0, frames_in=30, frames_out=30, repeats=0, dropped=0, fps_in=30.0,
        fps_out=30.0, latency_ms=None, stages_ms={}, rss_mb=100.0, gpu=None, events=0,
        remote=stats(lost),
    )  # fmt: skip


def test_server_token_and_ca_go_to_the_config_and_bad_input_is_one_line(
    qtbot: QtBot, settings: UiSettings, tmp_path: Path
) -> None:
    stream = StreamController(small_config())
    panel = ProcessingPanel(stream, settings)
    qtbot.addWidget(panel)
    box = panel.remote_box
    assert box.state.text() == OFF_TEXT
    box.url.setText("grpc://192.168.1.20:8001")
    box.url.editingFinished.emit()
    box.token.setText("s3cret")
    box.token.editingFinished.emit()
    assert stream.config.remote.url == "grpc://192.168.1.20:8001"
    assert stream.config.remote.token == "s3cret"
    assert "grpc://192.168.1.20:8001 when the stream starts" in box.state.text()
    assert Config.load(settings.config_path).remote.url == "grpc://192.168.1.20:8001"  # kept
    box.url.setText("http://192.168.1.20:8001")
    box.url.editingFinished.emit()
    assert stream.config.remote.url == "grpc://192.168.1.20:8001"  # unchanged
    assert "grpc://HOST:PORT" in box.problem.text() and box.problem.text().count("\n") == 1
    box.ca.setText(str(tmp_path / "no-such-ca.pem"))
    box.ca.editingFinished.emit()
    assert stream.config.remote.ca_cert is None  # unchanged
    assert "no such certificate file" in box.problem.text()
    assert box.problem.text().count("\n") == 1
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    box.ca.setText(str(ca))
    box.ca.editingFinished.emit()
    assert stream.config.remote.ca_cert == str(ca) and box.problem.text() == ""


def test_the_state_says_where_the_swap_runs_or_that_the_remote_is_lost() -> None:
    text, problem = state_text(snapshot(None), "grpc://127.0.0.1:8001")
    assert not problem and "cuda on NVIDIA H200" in text and "rtt p50/p99 4/9 ms" in text
    assert "51/49 KB/frame up/down, server batch 1.5" in text
    enhancer_lost = dataclasses.replace(stats(None), enhancer="REMOTE LOST, local enhance: x")
    assert enhancer_lost.label().endswith("server batch 1.5; REMOTE LOST, local enhance: x")
    assert enhancer_lost.details().splitlines()[-1] == "enhancer: REMOTE LOST, local enhance: x"
    text, problem = state_text(snapshot("nothing answers"), "grpc://127.0.0.1:8001")
    assert problem and text == f"{LOST}: nothing answers"
    assert state_text(snapshot(None), None) == (OFF_TEXT, False)


def test_the_stats_tab_and_status_bar_show_the_real_remote_swap(
    qtbot: QtBot,
    settings: UiSettings,
    testdata: Path,
    remote_models: dict[str, Path],
    narrow_server: Served,
) -> None:
    """A real stream through a real `livecam serve`: with a wrong token the Stats tab, the
    status bar and the Remote box say REMOTE LOST (in red) with the cause and its fix;
    with the right token (typed into the Remote box) the Stats tab shows where the swap
    really runs as the server reports it, the round trip, bytes per frame and Triton's
    mean batch, and the faces come from the server."""
    config = Config.from_dict(
        {
            "source": {**SYNTHETIC, "size": [320, 320], "fps": 30},
            "output": {"sinks": ["null"]},
            "pipeline": {"stages": ["swap"]},
            "swap": {
                "face": str(testdata / "faces" / "biden_official_portrait.jpg"),
                "preset": "standard",
                "provider": "cpu",
                "detector_model": str(testdata / "models" / "scrfd_2.5g_kps.onnx"),
                "recognizer_model": str(remote_models["recognizer"]),
                "swapper_model": str(remote_models["narrow"]),
            },
            "remote": {"url": narrow_server.url, "token": "not-the-token", "timeout_ms": 2000},
        }
    )
    settings.save_config(config)
    window = MainWindow(StreamController(Config()), settings)
    qtbot.addWidget(window)
    window.show()
    stats = window.panels["Stats"]
    box = window.panels["Processing"].remote_box  # type: ignore[attr-defined]
    assert isinstance(stats, StatsPanel) and isinstance(box, RemoteBox)

    def start() -> None:
        qtbot.mouseClick(window.start_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: not window.stream.starting, timeout=TIMEOUT_MS)
        assert window.stream.running

    def remote_text() -> str:
        return stats.values.get("remote", "")

    def swapping_remotely() -> bool:
        lines = remote_text().splitlines()
        return (
            len(lines) == 6
            and lines[0] == "remote swap on"
            and not lines[2].endswith("n/a")
            and not lines[5].startswith("faces: 0 from")
        )

    try:
        start()
        qtbot.waitUntil(lambda: remote_text().startswith(LOST), timeout=TIMEOUT_MS)
        cause = remote_text().splitlines()[0]
        assert "refused the token" in cause and "(fix: give the server's token" in cause
        assert ERROR_TEXT_STYLE in stats._labels["remote"].styleSheet()
        assert window.remote_label.text() == LOST and window.remote_label.isVisible()
        assert window.remote_label.toolTip() == cause
        assert box.state.text() == cause and ERROR_TEXT_STYLE in box.state.styleSheet()
        window.stream.stop()
        qtbot.waitUntil(lambda: not window.stream.running, timeout=TIMEOUT_MS)

        box.token.setText(TOKEN)
        box.token.editingFinished.emit()
        start()
        qtbot.waitUntil(swapping_remotely, timeout=TIMEOUT_MS)
        state, where, rtt, sizes, batch, faces = remote_text().splitlines()
        assert state == "remote swap on", remote_text()
        assert where.startswith(f"{narrow_server.url}: cpu on no GPU, inswapper"), where
        assert rtt.startswith("round trip p50/p99 ") and rtt.endswith(" ms")
        # at most one 128 px crop (49152 B) and its 512 floats up per frame with a face, the
        # crop back (a frame whose batch a newer one replaced, or still on its way, sends or
        # brings nothing)
        up, _, down = sizes.removesuffix(" KB down per frame").partition(" KB up, ")
        assert 0 < float(down) <= 49.2 and 0 < float(up) <= 51.2, sizes
        assert float(batch.removeprefix("server mean batch ")) >= 1.0, batch
        assert int(faces.split()[1]) > 0, faces
        assert stats._labels["remote"].styleSheet() == ""
        assert window.remote_label.text() == f"remote {narrow_server.url} (cpu)"
        # this machine's parts run as asked: no FALLBACK for a swap the server does
        assert "FALLBACK" not in window.provider_label.text(), window.provider_label.text()
    finally:
        window.close()
