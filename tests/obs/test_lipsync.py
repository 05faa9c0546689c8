"""The lip sync's arithmetic, with time given (no OBS, no sleeping): the target is the
latency plus one frame period within OBS's limits, the recent-latency window follows a
change and keeps enough frames of a slow pipeline, and the policy never sets in a loop."""

from __future__ import annotations

from types import MappingProxyType

from livecam.config.obs import MAX_SYNC_OFFSET_MS
from livecam.obs.lipsync import LatencyWindow, SyncPolicy, target_ms
from livecam.telemetry.snapshot import FrameReport

S = 1_000_000_000  # ns per second


def report(t_sent_s: float, latency_ms: float) -> FrameReport:
    sent = int(t_sent_s * S)
    return FrameReport(0, sent - int(latency_ms * 1e6), sent, latency_ms, MappingProxyType({}))


def test_the_target_is_the_latency_plus_one_frame_period_within_obs_limits() -> None:
    assert target_ms(67.4, 30.0) == 101  # 67.4 + 33.3
    assert target_ms(10.0, 60.0) == 27
    assert target_ms(10**6, 30.0) == MAX_SYNC_OFFSET_MS


def test_the_window_follows_a_change_and_keeps_a_slow_pipelines_frames() -> None:
    window = LatencyWindow(window_s=2.0, min_frames=8)
    for i in range(7):
        window.add(report(i / 30, 50.0))
    assert window.median_ms(int(1 * S)) is None  # too few frames yet
    for i in range(7, 90):  # 3 s at 30 fps: 50 ms, then 150 ms from 1.5 s
        window.add(report(i / 30, 50.0 if i < 45 else 150.0))
    assert window.median_ms(int(3 * S)) == 150.0  # the last 2 s only
    slow = LatencyWindow(window_s=2.0, min_frames=8)
    for i in range(10):  # 2 fps: 4 frames in any 2 s
        slow.add(report(i / 2, 400.0 + i))
    assert slow.median_ms(int(5 * S)) == 405.5  # the newest 8, not None


def test_the_policy_sets_first_then_only_on_a_real_move_and_never_in_a_loop() -> None:
    policy = SyncPolicy(threshold_ms=10, interval_s=3)
    assert policy.due(100, None, float("-inf"), 0.0)  # the first time
    assert not policy.due(108, 100, 0.0, 10.0)  # a wobble below the threshold
    assert not policy.due(160, 100, 0.0, 2.0)  # a real move, but too soon
    assert policy.due(160, 100, 0.0, 3.0)
    sets, last, last_at = 0, None, float("-inf")
    for tick in range(300):  # 60 s of a latency jumping between two values every tick
        now, target = tick * 0.2, (100 if tick % 2 else 200)
        if policy.due(target, last, last_at, now):
            sets, last, last_at = sets + 1, target, now
    assert sets <= 60 / 3 + 1
