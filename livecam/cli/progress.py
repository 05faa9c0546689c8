"""A progress bar with ETA for runs of known length (a video file converted or played)."""

from __future__ import annotations

from typing import IO

from tqdm import tqdm

from livecam.telemetry.snapshot import Snapshot


def frames_done(snapshot: Snapshot) -> int:
    """Captured frames whose fate is settled: sent, skipped by the output or dropped."""
    return snapshot.frames_out + snapshot.skipped + snapshot.dropped


class Progress:
    """``done`` of ``total`` frames, the rate and the time left, redrawn in place on
    ``stream`` (stderr in the CLI) by ``update``; ``close`` leaves the final line."""

    def __init__(self, total: int, label: str, stream: IO[str]) -> None:
        self.total = total
        self._bar = tqdm(
            total=total, desc=label, unit="frame", file=stream, dynamic_ncols=True, leave=True
        )

    def update(self, done: int) -> None:
        self._bar.update(max(0, min(done, self.total) - self._bar.n))

    def write(self, text: str) -> None:
        """Print a line above the bar (events) without breaking it."""
        self._bar.write(text, file=self._bar.fp)

    def close(self) -> None:
        self._bar.close()
