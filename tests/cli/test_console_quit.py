"""`livecam run --commands` on a looping testdata clip: `quit` and the end of standard input
end the run with status 0; wrong lines get the live command's syntax as their fix (an
unknown command lists the commands), and a control's own fix is worded as a command."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

from cli_output import livecam_with_commands
from waiting import poll

CLIP = Path("video") / "openmpf_video_01_short_h264_aac.mp4"


class Run:
    """``livecam run`` on the clip (looped: it never ends by itself) with ``--commands``;
    its stderr lines collected on a thread."""

    def __init__(self, testdata: Path) -> None:
        self.proc = livecam_with_commands(
            ["--source", str(testdata / CLIP), "--loop", "--sink", "null"], subprocess.DEVNULL
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)

    @property
    def err(self) -> str:
        return "".join(self.lines)

    def send(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text)
        self.proc.stdin.flush()

    def wait_for(self, text: str) -> None:
        assert poll(lambda: text in self.err or self.proc.poll() is not None, 60), text
        assert text in self.err, self.err

    def end(self) -> int:
        """The exit status (the run must end by itself: no signal is sent)."""
        try:
            status = self.proc.wait(timeout=60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        self._reader.join(10)
        return status


def test_quit_ends_the_run_and_wrong_lines_get_the_command_syntax(testdata: Path) -> None:
    run = Run(testdata)
    group = testdata / "faces" / "obama_biden_two_people.jpg"
    run.send(f"bogus\nface\nface {group} one\nblank maybe\nface {group}\n")
    run.wait_for("2 faces found")  # the group photo's build failed (on the loader)
    run.send("quit\n")
    assert run.end() == 0, run.err
    err = run.err
    assert "unknown command 'bogus'" in err
    assert "commands: swap, blank, freeze, mirror, face, select, preset, target, set, stage" in err
    assert "detect_size" not in err, "an unknown command lists commands, not setting names"
    assert "'face' is missing an argument\n  fix: `face IMAGE` or `face IMAGE N`" in err
    assert "invalid literal for int() with base 10: 'one'\n  fix: `face IMAGE`" in err
    assert "expected on or off, got 'maybe'\n  fix: `blank on|off" in err
    # the control's fix for a group photo names the live command, not --face-index
    assert "(fix: type `face IMAGE N` (0 to 1) to pick one face)" in err
    assert "--face-index" not in err
    assert "commands: quit: stopping the stream" in err


def test_the_end_of_standard_input_ends_the_run(testdata: Path) -> None:
    run = Run(testdata)
    assert run.proc.stdin is not None
    run.proc.stdin.close()
    assert run.end() == 0, run.err
    assert "commands: end of input: stopping the stream" in run.err


def test_commands_piped_with_the_end_of_input_straight_after_are_all_applied(
    testdata: Path,
) -> None:
    """The whole input arrives at once and ends: each command is applied (its outcome
    printed) before the run stops; a pasted megabyte is echoed cut."""
    run = Run(testdata)
    assert run.proc.stdin is not None
    run.send("x" * 1_000_000 + "\nfreeze on\nmirror on\nblank on\n")
    run.proc.stdin.close()
    assert run.end() == 0, run.err[-2000:]
    err = run.err
    assert "... (1000000 characters)'" in err and max(map(len, err.splitlines())) < 1000
    for applied in ("freeze on", "mirror on", "blank on"):
        assert f"controls: {applied}" in err, err[-2000:]
    assert err.rstrip().endswith("commands: end of input: stopping the stream"), err[-2000:]
