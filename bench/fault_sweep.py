"""Faults while `livecam run` is running, each in a real child process: the disk fills
(a file-size limit, ``RLIMIT_FSIZE``, at several points of each writer), the output folder
is removed or made unwritable mid-recording, the process is killed and another run
starts, the looped source file is deleted, the stats file is a FIFO nobody reads, a still
photo is written to a still file. Prints how many cases end cleanly and every other one.

Usage: python bench/fault_sweep.py [--jobs J] [--only SUBSTRING]

Clean means: the run ends (within 90 s), with no traceback, its status and at most one
``error:`` line as the case expects, and nothing lost: whatever of a recording plays is
under the chosen name (or ``NAME-partial``/``NAME-recovered``), never a 0-byte file under
the user's name and never a hidden temporary file holding bytes (an emptied one that a
read-only folder keeps is named in the error line). The folder-made-unwritable cases
run the child without root's power to ignore permissions when this runs as root.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTDATA = Path(os.environ.get("LIVECAM_TESTDATA", REPO.parent / "shared" / "testdata"))
CLIP = TESTDATA / "video" / "liveportrait_d6.mp4"  # 480x480, 1008 frames, 30 fps
SHORT = TESTDATA / "video" / "openmpf_video_01_short_h264_aac.mp4"
PHOTO = REPO / "assets" / "grace_hopper.jpg"
VIDEOS = (".mp4", ".mov", ".mkv", ".avi")


@dataclass
class Case:
    name: str
    args: list[str]  # after `livecam run`; {tmp} is the case's folder
    status: set[int]  # the exit statuses that are right
    limit: int | None = None  # RLIMIT_FSIZE of the child
    during: Callable[[subprocess.Popen[str], Path], None] | None = None  # the fault
    output: str | None = None  # a recording whose frames must not be lost
    unprivileged: bool = False  # obeys file permissions even as root
    then: list[str] = field(default_factory=list)  # a next run's args (after a kill)


def hidden(folder: Path) -> list[Path]:
    """The hidden temporary recordings left that hold bytes: an emptied one (a read-only
    folder does not let it be removed; the error line names it, the next start removes
    it) holds nothing of the user's."""
    return sorted(p for p in folder.rglob(".*") if ".recording-" in p.name and p.stat().st_size > 0)


def wait_for(check: Callable[[], bool], timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return False


def grown(folder: Path, size: int) -> Callable[[], bool]:
    def check() -> bool:
        try:
            return any(p.stat().st_size > size for p in hidden(folder))
        except OSError:
            return False

    return check


def remove_folder(proc: subprocess.Popen[str], tmp: Path) -> None:
    if wait_for(grown(tmp / "out", 200_000)):
        shutil.rmtree(tmp / "out", ignore_errors=True)


def lock_folder(proc: subprocess.Popen[str], tmp: Path) -> None:
    if wait_for(grown(tmp / "out", 200_000)):
        (tmp / "out").chmod(0o555)


def kill(proc: subprocess.Popen[str], tmp: Path) -> None:
    if wait_for(grown(tmp / "out", 300_000)):
        proc.send_signal(signal.SIGKILL)


def opened(name: str) -> Callable[[subprocess.Popen[str], Path], None]:
    def check(proc: subprocess.Popen[str]) -> bool:
        try:
            return any(
                os.readlink(fd).endswith(name) for fd in Path(f"/proc/{proc.pid}/fd").iterdir()
            )
        except OSError:
            return False

    def fault(proc: subprocess.Popen[str], tmp: Path) -> None:
        if wait_for(lambda: check(proc)):
            time.sleep(0.5)  # a few loops' frames
            (tmp / name).unlink()

    return fault


def remove_stats_folder(proc: subprocess.Popen[str], tmp: Path) -> None:
    if wait_for(lambda: (tmp / "stats").is_dir()):
        time.sleep(1.0)
        shutil.rmtree(tmp / "stats", ignore_errors=True)


def cases() -> list[Case]:
    found = []
    convert = ["--source", str(CLIP), "--quiet"]
    for suffix in VIDEOS:
        for limit in (400_000, 2_000_000):
            found.append(
                Case(
                    f"disk full at {limit // 1000} KB, {suffix}",
                    [*convert, "--sink", f"{{tmp}}/out/rec{suffix}"],
                    {1},
                    limit=limit,
                    output=f"out/rec{suffix}",
                )
            )
        live = [
            "--source",
            str(CLIP),
            "--realtime",
            "--quiet",
            "--sink",
            f"{{tmp}}/out/rec{suffix}",
        ]
        found.append(Case(f"folder removed, {suffix}", live, {1}, during=remove_folder))
        found.append(
            Case(
                f"folder made unwritable, {suffix}",
                live,
                {0, 1},
                during=lock_folder,
                output=f"out/rec{suffix}",
                unprivileged=True,
            )
        )
        found.append(
            Case(
                f"killed, then a still elsewhere, {suffix}",
                live,
                {-signal.SIGKILL},
                during=kill,
                output=f"out/rec{suffix}",
                then=["--source", str(PHOTO), "--frames", "1", "--quiet", "--sink", "{tmp}/s.png"],
            )
        )
    for suffix in (".png", ".jpg"):
        found.append(
            Case(
                f"disk full, still {suffix}",
                [
                    "--source",
                    str(PHOTO),
                    "--frames",
                    "1",
                    "--quiet",
                    "--sink",
                    f"{{tmp}}/out/s{suffix}",
                ],
                {1},
                limit=20_000,
            )
        )
    found.append(
        Case(
            "looped source deleted",
            ["--source", "{tmp}/clip.mp4", "--loop", "--frames", "100000", "--sink", "null", "-q"],
            {1},
            during=opened("clip.mp4"),
        )
    )
    found.append(
        Case(
            "stats file is a FIFO nobody reads",
            ["--source", "synthetic", "--size", "160x120", "--frames", "5", "--sink", "null"]
            + ["-q", "--stats-json", "{tmp}/fifo"],
            {1, 2},
        )
    )
    found.append(
        Case(
            "stats folder removed",
            ["--source", "synthetic", "--size", "160x120", "--frames", "90", "--sink", "null"]
            + ["-q", "--stats-json", "{tmp}/stats/s.json"],
            {1, 2},  # exit 2: removed before the run checked it
            during=remove_stats_folder,
        )
    )
    found.append(
        Case(
            "still photo into a still file",
            ["--source", str(PHOTO), "--sink", "{tmp}/out/s.jpg", "-q"],
            {0},
        )
    )
    return found


def child_setup(case: Case) -> Callable[[], None]:
    def setup() -> None:
        os.setsid()
        if case.limit is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (case.limit, case.limit))
        if case.unprivileged and os.geteuid() == 0:  # root would write anyway
            libc = ctypes.CDLL(None, use_errno=True)
            for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
                libc.prctl(24, capability, 0, 0, 0)  # PR_CAPBSET_DROP

    return setup


def start(args: list[str], tmp: Path, case: Case) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "LIVECAM_CACHE_DIR": str(tmp / "cache"),
        "XDG_DATA_HOME": str(tmp / "data"),
        "XDG_CONFIG_HOME": str(tmp / "config"),
        "HOME": str(tmp),
    }
    env.pop("DISPLAY", None)
    argv = [a.replace("{tmp}", str(tmp)) for a in args]
    return subprocess.Popen(
        [sys.executable, "-m", "livecam", "run", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=tmp,
        preexec_fn=child_setup(case),
    )


def finish(proc: subprocess.Popen[str]) -> tuple[int | None, str]:
    try:
        _out, err = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _out, err = proc.communicate()
        return None, err
    return proc.returncode, err


def plays(path: Path) -> bool:
    from livecam.sinks.recording.recovery import playable

    facts = playable(path)
    return facts is not None and facts[0] > 0


def kept(tmp: Path, output: str) -> list[Path]:
    """The playable files of the recording ``output`` under a name the user sees."""
    out = tmp / output
    names = [out, *out.parent.glob(f"{out.stem}-*{out.suffix}")] if out.parent.is_dir() else []
    return [p for p in names if p.is_file() and plays(p)]


def run_case(case: Case) -> tuple[str, str]:
    with tempfile.TemporaryDirectory(prefix="livecam-faults-") as name:
        tmp = Path(name)
        (tmp / "out").mkdir()
        (tmp / "stats").mkdir()
        shutil.copy(SHORT, tmp / "clip.mp4")
        os.mkfifo(tmp / "fifo")
        proc = start(case.args, tmp, case)
        if case.during is not None:
            case.during(proc, tmp)
        code, err = finish(proc)
        if case.then:
            code2, err2 = finish(start(case.then, tmp, case))
            err = f"{err}\n--- next run (exit {code2}):\n{err2}"
            if code2 != 0:
                return "next run failed", err
        if (tmp / "out").is_dir():
            (tmp / "out").chmod(0o755)
        if code is None:
            return "hang", err
        if "Traceback" in err or "unexpected" in err:
            return "traceback", err
        errors = [line for line in err.splitlines() if line.startswith("error:")]
        if code not in case.status:
            return f"exit {code}", err
        if code not in (0, -signal.SIGKILL) and len(errors) != 1:
            return f"{len(errors)} error lines", err
        if case.output is not None:
            out = tmp / case.output
            if out.is_file() and out.stat().st_size == 0:
                return "0-byte file under the user's name", err
            if hidden(tmp / "out"):
                return "hidden temporary left", err
            emptied = [p for p in (tmp / "out").glob(".*.recording-*") if p.name not in err]
            if emptied:
                return "emptied hidden file not named", err
            if not kept(tmp, case.output):
                return "nothing kept that played", err
        return "clean", err


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--only", default="")
    a = p.parse_args()
    chosen = [c for c in cases() if a.only in c.name]
    started = time.monotonic()
    counts: Counter[bool] = Counter()
    odd = []
    with ThreadPoolExecutor(a.jobs) as pool:
        for case, (kind, err) in zip(chosen, pool.map(run_case, chosen), strict=True):
            counts[kind == "clean"] += 1
            print(f"  {kind:34s} {case.name}", flush=True)
            if kind != "clean":
                odd.append(f"[{kind}] {case.name}\n{err[-1500:]}")
    print(f"{counts[True]} of {len(chosen)} fault cases clean ({time.monotonic() - started:.0f} s)")
    for text in odd:
        print(text)


if __name__ == "__main__":
    main()
