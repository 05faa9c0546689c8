"""The Processing tab's Remote box: the server and token go to ``[remote]`` for the next
start, a malformed URL is one red line that changes nothing, and the state line says
where the swap runs, or REMOTE LOST in red while the local swap stands in."""

from __future__ import annotations

from pytestqt.qtbot import QtBot
from synthetic_stream import small_config

from livecam.config.schema import Config
from livecam.remote.swapper import LOST, RemoteStats
from livecam.telemetry.snapshot import Snapshot
from ui.panels.processing_panel import ProcessingPanel
from ui.panels.remote_box import OFF_TEXT, state_text
from ui.settings import UiSettings
from ui.stream import StreamController


def stats(lost: str | None) -> RemoteStats:
    return RemoteStats(
        address="grpc://127.0.0.1:8001",
        route="local" if lost else "remote",
        lost=lost,
        rtt_p50_ms=4.0,
        rtt_p99_ms=9.0,
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


def test_server_and_token_go_to_the_config_and_a_bad_url_is_one_line(
    qtbot: QtBot, settings: UiSettings
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


def test_the_state_says_where_the_swap_runs_or_that_the_remote_is_lost() -> None:
    text, problem = state_text(snapshot(None), "grpc://127.0.0.1:8001")
    assert not problem and "cuda on NVIDIA H200" in text and "rtt p50/p99 4/9 ms" in text
    text, problem = state_text(snapshot("nothing answers"), "grpc://127.0.0.1:8001")
    assert problem and text == f"{LOST}: nothing answers"
    assert state_text(snapshot(None), None) == (OFF_TEXT, False)
