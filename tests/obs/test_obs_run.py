"""``livecam run --obs`` from the terminal, with the real OBS (``obs`` fixture) and with
nothing listening: the connection shows in the events and the status line, and a missing
OBS is one warning with the fix while the run goes on to its end."""

from __future__ import annotations

import os
import subprocess
import sys

from obs_studio import ObsStudio, free_port

from livecam.obs.client import Session

RUN = ["run", "--source", "synthetic", "--size", "160x120", "--sink", "null", "--frames", "60"]


def livecam_run(port: int, password: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, LIVECAM_OBS_PASSWORD=password)
    args = [*RUN, "--obs", "--obs-host", "127.0.0.1", "--obs-port", str(port)]
    return subprocess.run(
        [sys.executable, "-m", "livecam", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_a_run_shows_obs_in_its_events_and_status_line(obs: ObsStudio, studio: Session) -> None:
    done = livecam_run(obs.port, obs.password)
    assert done.returncode == 0, done.stderr
    assert "[info] obs: connected to OBS 2" in done.stderr
    assert "OBS idle | in" in done.stderr  # the status line starts with OBS's state
    assert obs.password not in done.stderr + done.stdout


def test_a_run_without_obs_warns_once_and_goes_on() -> None:
    done = livecam_run(free_port(), "whatever")
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if line.startswith("[warning] obs:")]
    assert len(warnings) == 1, done.stderr
    assert (
        "OBS is not running" in warnings[0] and "Tools > WebSocket Server Settings" in warnings[0]
    )
    assert "frames in 60" in done.stdout and "Traceback" not in done.stderr
