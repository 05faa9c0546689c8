"""The quality ladder, the VRAM watchdog and adaptive quality on a real stream.

The App, its control plane, the loader and the lite preset's real ONNX models run as they
do live (synthetic source, null sink); only the free-VRAM reading and the controller's
clock are driven by the test (constructor inputs of ``QualityOptions``), and one test
stage raises ONNX Runtime's out-of-memory message. No timing assertions: bounded polls.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, get_args

import numpy as np
import pytest
from fakes import PassStage
from waiting import poll

from livecam.app import App
from livecam.cli.main import main
from livecam.config.schema import Config, MemoryStrategy, QualityLevel, SwapConfig
from livecam.control import quality_ladder as quality
from livecam.control.quality_controller import QualityController, QualityOptions, is_out_of_memory
from livecam.errors import ConfigError
from livecam.runtime.onnx_model import MEMORY, OnnxModel, RuntimeOptions, memory_options
from livecam.types import Event, FramePacket

REPO = Path(__file__).resolve().parents[2]
FACE = REPO / "assets" / "grace_hopper.jpg"
ORT_OOM = (
    "[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Non-zero status code returned while running "
    "Conv node. Name:'Conv_12' Status Message: /onnxruntime/core/framework/bfc_arena.cc:376 "
    "void* onnxruntime::BFCArena::AllocateRawInternal(size_t, bool) Failed to allocate memory "
    "for requested buffer of size 268435456"
)


# --- the ladder (config only) --------------------------------------------------------------
def test_the_ladder_is_the_configs_list_of_levels() -> None:
    assert (quality.AUTO, *quality.NAMES) == get_args(QualityLevel)


def test_each_level_sets_the_documented_settings_over_the_users() -> None:
    user = SwapConfig.of(preset="quality", enhance_every=3, detect_size=640, provider="cuda")
    expected: list[dict[str, Any]] = [
        {},
        {"face_batch": 1},
        {"face_batch": 1, "enhance_every": 3},  # already every 3rd frame: kept
        {"face_batch": 1, "enhance_every": 3, "enhancer": "none"},
        {"face_batch": 1, "enhance_every": 3, "enhancer": "none", "detect_size": 256},
        {
            "face_batch": 1,
            "enhance_every": 3,
            "enhancer": "none",
            "detect_size": 256,
            "provider": "cpu",
        },
    ]
    for index, settings in enumerate(expected):
        cfg = quality.level_config(user, index)
        got = {k: cfg.value(k) for k in quality.FIELDS if cfg.value(k) != user.value(k)}
        assert got == {k: v for k, v in settings.items() if user.value(k) != v}, index
    # every other frame when the user runs it on each frame
    assert quality.level_config(user.changed(enhance_every=1), 2).neural.enhance_every == 2


def test_levels_that_change_nothing_are_skipped() -> None:
    lite = SwapConfig(preset="lite")  # no enhancer: its two levels change nothing
    assert quality.step_down(lite, 0) == 1
    assert quality.step_down(lite, 1) == quality.index_of("small-detector")
    assert quality.step_down(lite, 4) == 5 and quality.step_down(lite, 5) is None
    assert quality.step_up(lite, 5) == 4 and quality.step_up(lite, 4) == 1
    assert quality.step_up(lite, 1) == 0 and quality.step_up(lite, 0) is None
    assert quality.step_up(lite, 5, ceiling=4) == 4 and quality.step_up(lite, 4, 4) is None
    small_cpu = SwapConfig.of(preset="quality", detect_size=200, provider="cpu")
    assert quality.step_down(small_cpu, 3) is None  # detector already small, already on CPU


def test_a_setting_changed_while_a_level_is_in_force_stays_the_users() -> None:
    user = SwapConfig(preset="quality")
    at_level = quality.level_config(user, 3)
    theirs = at_level.changed(opacity=0.5, detect_size=800)
    base = quality.rebase(user, theirs, 3)
    assert base.masks.opacity == 0.5 and base.detect.detect_size == 800
    assert (
        base.neural.enhancer is None and base.runtime.face_batch == 0
    )  # the level's, not the user's


def test_a_pinned_level_is_applied_at_the_start() -> None:
    cfg = Config().with_section("swap", preset="quality", quality="no-enhancer")
    start = quality.pinned_config(cfg).swap
    assert (start.runtime.face_batch, start.neural.enhance_every, start.neural.enhancer) == (
        1,
        2,
        "none",
    )
    assert quality.pinned_config(cfg.with_section("swap", quality="auto")) == cfg.with_section(
        "swap", quality="auto"
    )
    with pytest.raises(ConfigError, match="use auto or one of full"):
        quality.index_of("best")


def test_out_of_memory_messages_are_recognised() -> None:
    assert is_out_of_memory(ORT_OOM)
    assert is_out_of_memory("CUDA failure 2: out of memory ; GPU=0")
    assert not is_out_of_memory("RuntimeError('shape mismatch')")


# --- the memory strategy --------------------------------------------------------------------
def test_each_memory_strategy_sets_its_ort_options(testdata: Path) -> None:
    low = memory_options("low")
    assert low["provider_options"]["cuda"] == {
        "arena_extend_strategy": "kSameAsRequested",
        "cudnn_conv_use_max_workspace": "0",
        "gpu_mem_limit": str(1536 * 2**20),
    }
    assert low["cpu_arena"] is False and low["max_batch"] == 1
    # the config's names (its field's choices, below runtime) are the runtime's levels
    assert tuple(MEMORY) == get_args(MemoryStrategy)
    for name in ("balanced", "high"):
        opts = memory_options(name)
        assert opts["provider_options"]["cuda"] == {
            "arena_extend_strategy": "kNextPowerOfTwo",
            "cudnn_conv_use_max_workspace": "1",
        }
        assert opts["cpu_arena"] is None and opts["max_batch"] == MEMORY[name].batch_limit
    assert memory_options("high", batch=2)["max_batch"] == 2
    with pytest.raises(ConfigError, match="use one of low, balanced, high"):
        memory_options("huge")  # type: ignore[arg-type]
    # a real session: the options reach ONNX Runtime (CUDA's in the chain it was given)
    path = testdata / "models" / "mobilefacenet.onnx"
    model = OnnxModel(path, RuntimeOptions(**low), dynamic_batch=True)
    assert model.session.get_session_options().enable_cpu_mem_arena is False
    asked = model.options.provider_options_for(False)["cuda"]
    assert asked["arena_extend_strategy"] == "kSameAsRequested"
    assert asked["gpu_mem_limit"] == str(1536 * 2**20)
    # balanced: ORT's CPU arena only for a session on a GPU, never on the CPU (it grew
    # with each batch shape and gave nothing back: bench/bench_session_rss.py)
    balanced = RuntimeOptions(**memory_options("balanced"))
    assert balanced.session_options(on_cpu=False).enable_cpu_mem_arena is True
    on_cpu = OnnxModel(path, dataclasses.replace(balanced, provider="cpu"), dynamic_batch=True)
    assert on_cpu.session.get_session_options().enable_cpu_mem_arena is False
    assert RuntimeOptions(cpu_arena=True).session_options(on_cpu=True).enable_cpu_mem_arena


class CallSizes(OnnxModel):
    """The real model, noting the batch size of each call."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls: list[int] = []

    def run(self, feeds: Mapping[str, Any]) -> list[Any]:
        self.calls.append(len(next(iter(feeds.values()))))
        return super().run(feeds)


def test_the_batch_limit_splits_a_batch_into_calls_with_the_same_outputs(testdata: Path) -> None:
    path = testdata / "models" / "mobilefacenet.onnx"
    whole = OnnxModel(path, RuntimeOptions(), dynamic_batch=True)
    assert whole.fixed_batch is None
    name = whole.input_names[0]
    shape = [5, *(d if isinstance(d, int) else 112 for d in whole.inputs[0].shape[1:])]
    faces = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    limited = CallSizes(path, RuntimeOptions(max_batch=2), dynamic_batch=True)
    expected = whole.run_batch({name: faces}, [name])[0]
    got = limited.run_batch({name: faces}, [name])[0]
    assert limited.calls == [2, 2, 1]  # no padding on a dynamic batch axis
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


# --- on a real stream -----------------------------------------------------------------------
class Clock:
    """The controller's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Gauge:
    """Free VRAM in MB as the test sets it (None: no GPU)."""

    def __init__(self, mb: float | None) -> None:
        self.mb = mb

    def __call__(self) -> float | None:
        return self.mb


class OutOfMemoryStage(PassStage):
    """A swap stage whose every run fails as ONNX Runtime does when the GPU is full."""

    name = "swap"
    required = True

    def process(self, batch: list[FramePacket]) -> list[FramePacket]:
        raise RuntimeError(ORT_OOM)


def lite_config(**swap: Any) -> Config:
    return Config.from_dict(
        {
            "source": {"spec": "synthetic", "size": [320, 240], "fps": 30},
            "output": {"sinks": ["null"]},
            "pipeline": {"stages": ["swap"]},
            "swap": {"face": str(FACE), "preset": "lite", **swap},
        }
    )


@pytest.fixture
def models(testdata: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = testdata / "models"
    monkeypatch.setenv("LIVECAM_MODELS_DIR", str(folder))
    return folder


class Stream:
    """A started App with the test's clock and free-VRAM gauge, and its quality events."""

    def __init__(self, cfg: Config, free_mb: float | None, **app: Any) -> None:
        self.clock, self.gauge = Clock(), Gauge(free_mb)
        opts = QualityOptions(clock=self.clock, free_vram_mb=self.gauge)
        self.app = App(cfg, quality=opts, **app)
        self.events: list[Event] = []
        self._lock = threading.Lock()
        self.app.telemetry.add_listener(self._on_event)
        self.app.start()
        assert self.app.quality is not None
        self.quality: QualityController = self.app.quality

    def _on_event(self, event: Event) -> None:
        if event.origin == "quality":
            with self._lock:
                self.events.append(event)

    def steps(self) -> list[Event]:
        with self._lock:
            return list(self.events)

    def drive(self, check: Callable[[], bool], step_s: float = 1.0, limit_s: float = 90) -> bool:
        """Advance the controller's clock by ``step_s`` and tick until ``check()`` holds
        (bounded by ``limit_s`` of real time: a deadline, not a timing assertion)."""
        deadline = time.monotonic() + limit_s
        while not check():
            if time.monotonic() > deadline:
                return False
            self.clock.now += step_s
            self.quality.tick()
            time.sleep(0.05)
        return True

    def settled(self) -> bool:
        """No quality change pending (the last one is in place or failed)."""
        self.quality.tick()
        return self.quality._pending is None

    def stop(self) -> None:
        self.app.stop()


@pytest.fixture
def streams() -> Iterator[list[Stream]]:
    made: list[Stream] = []
    yield made
    for stream in made:
        stream.stop()


def wait_frames(stream: Stream, n: int = 10) -> None:
    assert poll(lambda: stream.app.snapshot().frames_out >= n, 60), "no frames"


def test_low_free_vram_steps_down_once_and_back_up_with_hysteresis(
    models: Path, streams: list[Stream]
) -> None:
    # auto, with a target the lite preset always keeps: only memory moves the level
    s = Stream(lite_config(quality="auto", target_fps=1), free_mb=8000)
    streams.append(s)
    wait_frames(s)
    s.gauge.mb = 100  # another program took the GPU's memory
    assert s.drive(lambda: bool(s.steps()), step_s=0)
    assert s.drive(s.settled, step_s=0)
    first = s.steps()[0]
    assert first.level == "warning" and "step down to 'small-batch'" in first.message
    assert "free VRAM 100 MB is below 512 MB" in first.message
    assert s.quality.level == "small-batch" and s.app.controls.config.swap.runtime.face_batch == 1
    # what is saved and started with next time: the user's settings, not the level's
    assert s.app.config.swap.runtime.face_batch == 0 and s.app.config.swap.runtime.quality == "auto"
    # a free reading between the low mark and the room mark: no step either way
    s.gauge.mb = 1000
    for _ in range(40):
        s.clock.now += 1
        s.quality.tick()
    assert len(s.steps()) == 1 and s.quality.level == "small-batch"
    # room again, kept for the up window: back to the user's settings
    s.gauge.mb = 8000
    assert s.drive(lambda: len(s.steps()) == 2)
    assert s.drive(s.settled, step_s=0)
    up = s.steps()[1]
    assert up.level == "info" and "step up to 'full'" in up.message
    assert s.quality.level == "full" and s.app.controls.config.swap.runtime.face_batch == 0
    steps = s.quality.summary()["steps"]
    assert [(x["from"], x["to"]) for x in steps] == [
        ("full", "small-batch"),
        ("small-batch", "full"),
    ]


def test_an_out_of_memory_stage_steps_down_even_when_pinned(
    models: Path, streams: list[Stream]
) -> None:
    cfg = lite_config()  # quality "full" (pinned, the default)
    s = Stream(cfg, free_mb=None, stages=[OutOfMemoryStage()])
    streams.append(s)
    assert s.drive(lambda: bool(s.steps()), step_s=0.5)
    assert "out of memory" in s.steps()[0].message and "step down" in s.steps()[0].message
    assert s.drive(s.settled, step_s=0)
    assert s.quality.level == "small-batch" and s.app.controls.config.swap.runtime.face_batch == 1
    # the rebuilt stage is the real swap stage: frames flow through it
    assert not isinstance(s.app.controls._inference.stages[0], OutOfMemoryStage)
    stage_errors = [e for e in s.app.telemetry.recent_events() if e.origin == "stage swap"]
    assert stage_errors and "Failed to allocate memory" in stage_errors[0].message
    # no more failures: back up to the pinned level after the up window
    assert s.drive(lambda: len(s.steps()) == 2)
    assert s.drive(s.settled, step_s=0)
    assert s.quality.level == "full" and s.app.controls.config.swap.runtime.face_batch == 0


def test_fps_below_target_steps_down_and_a_pinned_level_does_not(
    models: Path, streams: list[Stream]
) -> None:
    # 240 fps out of a 30 fps source: always below target
    auto = Stream(lite_config(quality="auto", target_fps=240), free_mb=None)
    pinned = Stream(lite_config(quality="small-batch", target_fps=240), free_mb=None)
    streams += [auto, pinned]
    wait_frames(auto)
    wait_frames(pinned)
    assert auto.drive(lambda: bool(auto.steps()))
    assert "below the target 240" in auto.steps()[0].message
    assert auto.drive(auto.settled, step_s=0)
    assert auto.quality.level == "small-batch"
    # the pinned stream started at its level and never steps
    assert (
        pinned.app.controls.config.swap.runtime.face_batch == 1
        and pinned.quality.level == "small-batch"
    )
    for _ in range(30):
        pinned.clock.now += 1
        pinned.quality.tick()
    assert pinned.steps() == [] and pinned.quality.level == "small-batch"
    assert pinned.app.snapshot().frames_out > 0


def test_set_quality_pins_a_level_live_and_auto_lets_it_adapt(
    models: Path, streams: list[Stream]
) -> None:
    s = Stream(lite_config(quality="auto", target_fps=1, detect_size=320), free_mb=None)
    streams.append(s)
    controls = s.app.controls
    applied = controls.set_quality("small-detector").wait(60)
    swap = applied.config.swap
    assert swap.runtime.quality == "small-detector"
    assert (
        swap.runtime.face_batch,
        swap.neural.enhance_every,
        swap.neural.enhancer,
        swap.detect.detect_size,
    ) == (
        1,
        2,
        "none",
        256,
    )
    assert s.quality.level == "small-detector" and s.quality.pinned
    # back to full: the user's own settings return
    swap = controls.set_quality("full").wait(60).config.swap
    assert (
        swap.runtime.face_batch,
        swap.neural.enhance_every,
        swap.neural.enhancer,
        swap.detect.detect_size,
    ) == (
        0,
        1,
        None,
        320,
    )
    assert controls.set_quality("auto").wait(60).config.swap.runtime.quality == "auto"
    assert not s.quality.pinned
    with pytest.raises(ConfigError, match="quality level 'best' does not exist"):
        controls.set_quality("best")
    with pytest.raises(ConfigError, match="cannot change swap setting"):
        controls.update_swap(quality="cpu")
    assert s.app.config.swap.runtime.quality == "auto"


# --- the command line -----------------------------------------------------------------------
def test_quality_options_reach_the_stats_json(
    models: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stats = tmp_path / "stats.json"
    args = ["run", "--source", "synthetic", "--size", "160x120", "--sink", "null"]
    args += ["--frames", "20", "--face", str(FACE), "--preset", "lite", "-q"]
    args += ["--quality", "small-detector", "--memory", "low", "--target-fps", "20"]
    assert main([*args, "--stats-json", str(stats)]) == 0, capsys.readouterr().err
    summary = json.loads(stats.read_text())
    assert summary["quality"] == {
        "level": "small-detector",
        "setting": "small-detector",
        "steps": [],
    }


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--quality", "best"], "invalid choice: 'best'"),
        (["--memory", "huge"], "invalid choice: 'huge'"),
        (["--target-fps", "0"], "--target-fps 0 is invalid"),
        (["--quality", "auto"], "--quality applies only with the swap stage"),
    ],
)
def test_bad_quality_options_are_one_line_errors(
    capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    face = [] if "applies" in says else ["--face", str(FACE)]
    base = ["run", "--source", "synthetic", "--sink", "null", "--frames", "3", "-q", *face]
    assert main([*base, *args]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and says in lines[0], err


# --- the panel ------------------------------------------------------------------------------
def choose(box: Any, value: str) -> None:
    """Pick ``value`` in a combo box as a user does."""
    box.setCurrentIndex(box.findData(value))
    box.activated.emit(box.currentIndex())


def test_the_panel_pins_a_level_live_and_saves_the_memory_strategy(
    qtbot: Any, models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ui.panels.processing_panel import ProcessingPanel
    from ui.settings import UiSettings
    from ui.stream import StreamController

    monkeypatch.setenv("LIVECAM_CONFIG_DIR", str(tmp_path / "config"))
    settings = UiSettings()
    stream = StreamController(lite_config(quality="auto"))
    panel = ProcessingPanel(stream, settings)
    qtbot.addWidget(panel)
    assert panel.quality.currentData() == "auto" and panel.memory.currentData() == "balanced"
    stream.start()
    try:
        with qtbot.waitSignal(stream.applied, timeout=60000):
            choose(panel.quality, "small-detector")
        assert stream.controls is not None
        swap = stream.controls.config.swap  # in force: the level's settings
        assert swap.runtime.quality == "small-detector" and swap.detect.detect_size == 256
        assert panel.quality.currentData() == "small-detector"
    finally:
        stream.stop()
    # kept for the next start: the pin, with the user's own detector size under it
    assert stream.config.swap.runtime.quality == "small-detector"
    assert stream.config.swap.detect.detect_size == 400
    choose(panel.memory, "low")  # stopped: saved for the next start
    assert UiSettings().config.swap.runtime.memory == "low"
    assert stream.config.swap.runtime.memory == "low"
