"""A real OBS Studio for the tests: Debian's obs-studio (obs-websocket 5 built in) on a
private Xvfb, with software GL, in a private HOME whose ``global.ini`` switches the
WebSocket server on (with a password) and whose profile records small files into a
folder of the test session. ``ObsStudio`` starts, kills and restarts it."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from media import xvfb_display
from waiting import poll

from livecam.obs.client import Session, connect

PASSWORD = "test-secret-4711"
MIC = "LiveCam test mic"
OWN_OFFSET_MS = -25  # the user's own sync offset of the microphone (LiveCam never sets < 0)
PROFILE = "LiveCamTest"
START_TIMEOUT_S = 90.0  # a cold OBS on two shared cores

GLOBAL_INI = """[General]
FirstRun=true
LastVersion=486539266
EnableAutoUpdates=false
ConfirmOnExit=false

[Basic]
Profile={profile}
ProfileDir={profile}
SceneCollection={profile}
SceneCollectionFile={profile}

[OBSWebSocket]
FirstLoad=false
ServerEnabled=true
ServerPort={port}
AlertsEnabled=false
AuthRequired=true
ServerPassword={password}
"""

BASIC_INI = """[General]
Name={profile}

[Output]
Mode=Simple

[SimpleOutput]
FilePath={records}
RecFormat=mkv
RecQuality=Stream
RecEncoder=x264

[Video]
BaseCX=320
BaseCY=240
OutputCX=320
OutputCY=240
FPSType=1
FPSCommon=15

[Audio]
SampleRate=48000
ChannelSetup=Stereo
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ObsStudio:
    """One OBS process at a time on ``display``, configured in ``home``."""

    def __init__(self, home: Path, display: str) -> None:
        self.home = home
        self.display = display
        self.port = free_port()
        self.password = PASSWORD
        self.records = home / "records"
        self.records.mkdir(parents=True, exist_ok=True)
        config = home / ".config" / "obs-studio"
        profile = config / "basic" / "profiles" / PROFILE
        profile.mkdir(parents=True, exist_ok=True)
        (config / "global.ini").write_text(
            GLOBAL_INI.format(profile=PROFILE, port=self.port, password=PASSWORD)
        )
        (profile / "basic.ini").write_text(BASIC_INI.format(profile=PROFILE, records=self.records))
        self.log = home / "obs.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = dict(os.environ, HOME=str(self.home), DISPLAY=self.display)
        env.update(LIBGL_ALWAYS_SOFTWARE="1", QT_QPA_PLATFORM="xcb")
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                ["obs", "--minimize-to-tray", "--multi", "--disable-missing-files-check"],
                env=env,
                cwd=self.home,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        if not poll(self.answers, START_TIMEOUT_S, 0.2):
            raise RuntimeError(f"OBS did not start its WebSocket server; see {self.log}")

    def answers(self) -> bool:
        """OBS's WebSocket server accepts a connection (and the process still runs)."""
        if self.proc is None or self.proc.poll() is not None:
            return False
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), 0.5):
            return True
        return False

    def kill(self) -> None:
        """Kill OBS at once (SIGKILL: no clean shutdown, as a crash)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()
        self.proc = None

    def session(self) -> Session:
        """A connection of the test's own, to look at OBS."""
        return connect("127.0.0.1", self.port, self.password, 5.0)

    def prepared(self) -> Session:
        """OBS running (started again if a test killed it) with the microphone input
        ``MIC`` in its current scene at the user's own offset ``OWN_OFFSET_MS``; a
        connection of the test's own."""
        if not self.answers():
            self.start()
        session = self.session()
        scene = session.call("GetCurrentProgramScene")["currentProgramSceneName"]
        names = [i["inputName"] for i in session.call("GetInputList")["inputs"]]
        if MIC not in names:
            data = {"inputName": MIC, "inputKind": "pulse_input_capture", "inputSettings": {}}
            session.call("CreateInput", {"sceneName": scene, "sceneItemEnabled": True, **data})
        own = {"inputName": MIC, "inputAudioSyncOffset": OWN_OFFSET_MS}
        session.call("SetInputAudioSyncOffset", own)
        return session

    def remove(self, session: Session, name: str) -> None:
        """Remove input ``name`` from OBS when it is there (a test that adds it starts clean)."""
        if name in [i["inputName"] for i in session.call("GetInputList")["inputs"]]:
            session.call("RemoveInput", {"inputName": name})

    def offset(self, session: Session) -> int:
        """The microphone's audio sync offset in OBS now, ms."""
        got = session.call("GetInputAudioSyncOffset", {"inputName": MIC})
        return int(got["inputAudioSyncOffset"])


@contextlib.contextmanager
def obs_studio(home: Path) -> Iterator[ObsStudio | None]:
    """A running OBS in ``home`` on a private Xvfb, or None where obs-studio or Xvfb is
    not installed; stopped at the end."""
    if shutil.which("obs") is None or not sys.platform.startswith("linux"):
        yield None
        return
    with xvfb_display("1024x768") as display:
        if display is None:
            yield None
            return
        obs = ObsStudio(home, display)
        try:
            obs.start()
            yield obs
        finally:
            obs.stop()
