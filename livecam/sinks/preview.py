"""The ``window`` sink: a newest-frame hand-off to the Qt preview window in ``ui/``.

The output thread calls ``send``, which only stores the newest frame (no Qt, never blocks).
The main thread shows it: ``ui.preview_window.run_preview`` polls the hand-off with a
QTimer. This module never imports Qt; ``window_problem`` says, without loading Qt, why a
Qt window cannot open here (Qt aborts the whole process when no platform plugin starts).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib.util
import logging
import os
import platform
import re
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType

from livecam.errors import SinkError
from livecam.sinks.base import Sink
from livecam.types import Frame

log = logging.getLogger(__name__)

WAYLAND_CONNECT_TIMEOUT_S = 1.0
#: Qt platforms that draw nothing on screen
HEADLESS_PLATFORMS = ("offscreen", "minimal", "minimalegl")

#: Debian/Ubuntu package for each shared library Qt's Linux platform plugins link to
APT_PACKAGES: Mapping[str, str] = MappingProxyType(
    {
        "libxcb-icccm.so.4": "libxcb-icccm4",
        "libxcb-keysyms.so.1": "libxcb-keysyms1",
        "libxcb-cursor.so.0": "libxcb-cursor0",
        "libxcb-image.so.0": "libxcb-image0",
        "libxcb-render-util.so.0": "libxcb-render-util0",
        "libxcb-xinerama.so.0": "libxcb-xinerama0",
        "libxcb-randr.so.0": "libxcb-randr0",
        "libxcb-shape.so.0": "libxcb-shape0",
        "libxcb-xkb.so.1": "libxcb-xkb1",
        "libxcb-shm.so.0": "libxcb-shm0",
        "libxcb-sync.so.1": "libxcb-sync1",
        "libxcb-xfixes.so.0": "libxcb-xfixes0",
        "libxcb-render.so.0": "libxcb-render0",
        "libxcb-util.so.1": "libxcb-util1",
        "libxcb-xinput.so.0": "libxcb-xinput0",
        "libxcb-glx.so.0": "libxcb-glx0",
        "libxcb.so.1": "libxcb1",
        "libX11-xcb.so.1": "libx11-xcb1",
        "libX11.so.6": "libx11-6",
        "libxkbcommon.so.0": "libxkbcommon0",
        "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
        "libGL.so.1": "libgl1",
        "libGLX.so.0": "libglx0",
        "libGLdispatch.so.0": "libglvnd0",
        "libEGL.so.1": "libegl1",
        "libOpenGL.so.0": "libopengl0",
        "libfontconfig.so.1": "libfontconfig1",
        "libfreetype.so.6": "libfreetype6",
        "libdbus-1.so.3": "libdbus-1-3",
        "libglib-2.0.so.0": "libglib2.0-0",
        "libgthread-2.0.so.0": "libglib2.0-0",
        "libICE.so.6": "libice6",
        "libSM.so.6": "libsm6",
        "libwayland-client.so.0": "libwayland-client0",
        "libwayland-cursor.so.0": "libwayland-cursor0",
        "libwayland-egl.so.1": "libwayland-egl1",
    }
)

_DISPLAY_VAR = MappingProxyType({"xcb": "DISPLAY", "wayland": "WAYLAND_DISPLAY"})


def display_available(env: Mapping[str, str] | None = None) -> tuple[bool, str]:
    """Whether windows can be shown: (ok, detail). Linux needs DISPLAY or WAYLAND_DISPLAY."""
    if platform.system() != "Linux":
        return True, f"{platform.system()} desktop"
    env = os.environ if env is None else env
    found = [f"{k}={env[k]}" for k in ("DISPLAY", "WAYLAND_DISPLAY") if env.get(k)]
    if found:
        return True, ", ".join(found)
    return False, "neither DISPLAY nor WAYLAND_DISPLAY is set (no graphical session)"


def window_problem(env: Mapping[str, str] | None = None) -> str | None:
    """Why a Qt preview window cannot open here, or None when it can.

    Checked without loading Qt: PySide6 installed; QT_QPA_PLATFORM not a headless
    platform; on Linux a display for one of the platforms Qt would try (in Qt's order),
    that platform plugin's system libraries (the missing ones named with their apt
    packages), and for X11 that the X server answers.
    """
    env = os.environ if env is None else env
    qt_dir = pyside6_dir()
    if qt_dir is None:
        return "PySide6 is not installed (pip install PySide6-Essentials)"
    requested = [p.split(":")[0].strip().lower() for p in env.get("QT_QPA_PLATFORM", "").split(";")]
    requested = [p for p in requested if p]
    if requested and requested[0] in HEADLESS_PLATFORMS:
        return (
            f"QT_QPA_PLATFORM={env['QT_QPA_PLATFORM']} draws no visible window "
            "(unset QT_QPA_PLATFORM)"
        )
    if platform.system() != "Linux":
        return None
    ok, why = display_available(env)
    if not ok:
        return why
    candidates = requested or (["wayland", "xcb"] if env.get("WAYLAND_DISPLAY") else ["xcb"])
    reasons = []
    for name in candidates:
        reason = _platform_problem(name, qt_dir, env)
        if reason is None:
            return None
        reasons.append(reason)
    return "; ".join(reasons)


def pyside6_dir() -> Path | None:
    """The installed PySide6 package folder, found without importing it."""
    try:
        spec = importlib.util.find_spec("PySide6")
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(locations[0]) if locations else None


def _platform_problem(name: str, qt_dir: Path, env: Mapping[str, str]) -> str | None:
    var = _DISPLAY_VAR.get(name)
    if var is None:
        return None  # another platform (eglfs, vnc, ...) asked for by name: trust the user
    if not env.get(var):
        return f"Qt platform '{name}' needs {var}, which is not set"
    plugin = qt_dir / "Qt" / "plugins" / "platforms" / f"libq{name}.so"
    if not plugin.is_file():
        return f"this PySide6 has no '{name}' platform plugin ({plugin} is missing)"
    missing = missing_libraries(plugin)
    if missing:
        packages = " ".join(sorted({APT_PACKAGES.get(m, m) for m in missing}))
        return (
            f"Qt's '{name}' platform plugin needs system libraries that are missing: "
            f"{', '.join(missing)} (sudo apt-get install {packages})"
        )
    if name == "xcb" and not x_server_answers(env[var]):
        return (
            f"no X server answers on DISPLAY={env[var]} (set DISPLAY to your desktop's, "
            "e.g. :0, or start one: `xvfb-run livecam ...`)"
        )
    if name == "wayland":
        return wayland_problem(env)
    return None


def wayland_problem(env: Mapping[str, str]) -> str | None:
    """Why no Wayland compositor answers on ``WAYLAND_DISPLAY`` (its socket, relative to
    ``XDG_RUNTIME_DIR`` unless absolute), or None when one accepts a connection. Qt aborts
    the whole process when its wayland platform cannot connect."""
    display = env.get("WAYLAND_DISPLAY", "")
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if not Path(display).is_absolute() and not runtime:
        return (
            f"WAYLAND_DISPLAY={display} is set but XDG_RUNTIME_DIR is not, so its socket "
            "cannot be found (log in to the desktop session, or unset WAYLAND_DISPLAY)"
        )
    path = Path(runtime) / display
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(WAYLAND_CONNECT_TIMEOUT_S)
        try:
            probe.connect(str(path))
        except OSError as e:
            return (
                f"no Wayland compositor answers on WAYLAND_DISPLAY={display} ({path}: "
                f"{e.strerror or e}; unset WAYLAND_DISPLAY, or set it to your session's)"
            )
    return None


def missing_libraries(library: Path) -> list[str]:
    """Shared libraries ``library`` needs that the dynamic loader cannot find (via ldd)."""
    ldd = shutil.which("ldd")
    if ldd is None:
        return []
    try:
        out = subprocess.run(
            [ldd, str(library)], capture_output=True, text=True, timeout=10, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError) as e:
        log.debug("ldd %s failed: %r", library, e)
        return []
    return sorted(set(re.findall(r"^\s*(\S+) => not found", out, flags=re.MULTILINE)))


def x_server_answers(display: str) -> bool:
    """Whether an X server accepts a connection on ``display`` (through libX11)."""
    name = ctypes.util.find_library("X11")
    if name is None:
        return True  # cannot tell; the plugin check already found libX11
    xlib = ctypes.CDLL(name)
    xlib.XOpenDisplay.restype = ctypes.c_void_p
    xlib.XOpenDisplay.argtypes = [ctypes.c_char_p]
    xlib.XCloseDisplay.argtypes = [ctypes.c_void_p]
    handle = xlib.XOpenDisplay(display.encode())
    if not handle:
        return False
    xlib.XCloseDisplay(handle)
    return True


class FrameHandoff:
    """Newest-frame hand-off from the output thread to the GUI thread.

    ``put`` stores a reference to the newest frame (frames are not changed after they
    reach a sink) and counts distinct frames; ``newest(after)`` returns it when it is
    newer than frame number ``after``. ``user_closed`` is set by the GUI thread.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._frame: Frame | None = None
        self._count = 0
        self.user_closed = threading.Event()

    def put(self, frame: Frame) -> None:
        with self._lock:
            if frame is not self._frame:  # a repeat of the same frame is not a new frame
                self._frame = frame
                self._count += 1

    def newest(self, after: int = 0) -> tuple[int, Frame] | None:
        """(frame number, frame) if a frame newer than number ``after`` arrived, else None."""
        with self._lock:
            if self._frame is None or self._count <= after:
                return None
            return self._count, self._frame


class PreviewWindowSink(Sink):
    """Shows frames in a Qt window run by the main thread (``ui.preview_window``).

    ``send`` hands the newest frame over and returns at once. When the user closes the
    window (close button, Esc or q) ``closed`` becomes True; the output thread then drops
    this sink. Whoever runs the pipeline must run ``run_preview`` on the main thread while
    it streams (``livecam.cli.terminal_run.run_pipeline`` does); otherwise nothing is shown.
    """

    name = "window"
    wants_repeats = True  # cheap (a repeat is not a new frame) and notices a close when stalled

    def __init__(self, title: str = "LiveCam") -> None:
        self.title = title
        self.handoff = FrameHandoff()
        self.size = (0, 0)
        self.fps = 0.0
        self._open = False

    @property
    def closed(self) -> bool:  # type: ignore[override]
        """True once the user closed the window."""
        return self.handoff.user_closed.is_set()

    def check(self) -> None:
        """SinkError when no Qt window can be shown here (``window_problem``: no display,
        a headless QT_QPA_PLATFORM, missing system libraries, an X server that does not
        answer), each with its fix."""
        why = window_problem()
        if why is not None:
            raise SinkError(
                f"cannot open a preview window: {why}",
                "run LiveCam in a desktop session (or under `xvfb-run`) with QT_QPA_PLATFORM "
                "unset, or choose another output sink: virtualcam, a file such as out.mp4, "
                "or null",
            )

    def open(self, width: int, height: int, fps: float) -> None:
        """Check a Qt window can be shown here (the window itself is made by the main thread)."""
        self.check()
        self.size = (width, height)
        self.fps = fps
        self._open = True

    def send(self, frame: Frame, t_capture_ns: int | None = None, swapped: bool = False) -> None:
        if not self._open:
            if self.closed:
                return
            raise SinkError("preview window: send() before open()")
        self.handoff.put(frame)

    def close(self) -> None:
        self._open = False


def window_sinks(sinks: Iterable[Sink]) -> list[PreviewWindowSink]:
    """The preview windows among opened ``sinks``, including an auto sink's fallback window."""
    found = []
    for sink in sinks:
        chosen = getattr(sink, "chosen", sink)  # AutoSink: the sink it opened
        if isinstance(chosen, PreviewWindowSink):
            found.append(chosen)
    return found
