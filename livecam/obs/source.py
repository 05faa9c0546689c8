"""``livecam obs add-source``: LiveCam's picture as a source of an OBS scene, added once.

The source is named ``LiveCam`` (``SOURCE_NAME``). On Linux it is a Video Capture Device
source (``v4l2_input``) of the v4l2loopback device LiveCam writes; where no virtual
camera can start, a Window Capture of LiveCam's window (X11: ``xcomposite_input``,
Windows: ``window_capture``). Running it again adds nothing twice: an existing LiveCam
source is pointed at the device or window of now (replaced when it must change kind), and
put into the scene when it is not there yet.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from livecam.obs.client import ObsError, Session

SOURCE_NAME = "LiveCam"
CAMERA_KIND = "v4l2_input"
#: window capture input kinds by platform, in the order they are tried
WINDOW_KINDS = ("xcomposite_input", "window_capture")
WINDOW_TITLE = "LiveCam"  # the panel's window (ui.main_window.TITLE)
WINDOW_FIX = (
    "start the virtual camera (Linux: sudo modprobe v4l2loopback devices=1 exclusive_caps=1; "
    "see `livecam doctor`) and give --device, or add a Window Capture of the LiveCam window "
    "in OBS by hand (X11 needs a window manager with EWMH)"
)


@dataclass(frozen=True)
class SourceTarget:
    """What the LiveCam source shows: an input kind, its settings, and in words."""

    kind: str
    settings: dict[str, Any] = field(default_factory=dict)
    what: str = ""


def camera_target(device: str) -> SourceTarget:
    """The v4l2loopback device ``device`` (e.g. ``/dev/video10``)."""
    return SourceTarget(CAMERA_KIND, {"device_id": device}, f"the virtual camera {device}")


def window_target(kinds: set[str], title: str = WINDOW_TITLE) -> SourceTarget:
    """A window capture of LiveCam's window, of the first kind OBS has; ObsError when it
    has none (X11 without a window manager, Wayland)."""
    what = f"the window {title!r}"
    if "xcomposite_input" in kinds:  # window id 0: OBS finds the window by title and class
        return SourceTarget("xcomposite_input", {"capture_window": f"0\r\n{title}\r\n"}, what)
    if "window_capture" in kinds:  # title:class:executable, matched by title first
        return SourceTarget("window_capture", {"window": f"{title}::", "priority": 1}, what)
    raise ObsError("OBS has no window capture source here", WINDOW_FIX)


def add_source(session: Session, target: SourceTarget, scene: str | None = None) -> str:
    """Put the LiveCam source showing ``target`` into ``scene`` (default: the current
    program scene), once; return what was done in one line."""
    kinds = set(session.call("GetInputKindList").get("inputKinds", []))
    if target.kind not in kinds:
        raise ObsError(f"OBS has no {target.kind} source here", WINDOW_FIX)
    scenes = [s.get("sceneName") for s in session.call("GetSceneList").get("scenes", [])]
    if scene is None:
        scene = str(session.call("GetCurrentProgramScene").get("currentProgramSceneName"))
    elif scene not in scenes:
        raise ObsError(
            f"OBS has no scene named {scene!r} (renamed or deleted?)",
            "give one of: "
            + ", ".join(repr(s) for s in scenes)
            + " (or no --scene: the current one)",
        )
    inputs = {
        i["inputName"]: i["inputKind"] for i in session.call("GetInputList").get("inputs", [])
    }
    kind = inputs.get(SOURCE_NAME)
    if kind is not None and kind != target.kind:
        if kind not in (CAMERA_KIND, *WINDOW_KINDS):
            raise ObsError(
                f"OBS already has a source named {SOURCE_NAME!r} that is not LiveCam's ({kind})",
                "rename that source in OBS, then run this again",
            )
        session.call("RemoveInput", {"inputName": SOURCE_NAME})  # LiveCam's, of the other kind
        kind = None
    if kind is None:
        data = {
            "inputName": SOURCE_NAME,
            "inputKind": target.kind,
            "inputSettings": target.settings,
        }
        session.call("CreateInput", {"sceneName": scene, "sceneItemEnabled": True, **data})
        return f"added {SOURCE_NAME} ({target.what}) to OBS's scene {scene!r}"
    settings = {"inputName": SOURCE_NAME, "inputSettings": target.settings, "overlay": True}
    session.call("SetInputSettings", settings)
    items = session.call("GetSceneItemList", {"sceneName": scene}).get("sceneItems", [])
    if any(item.get("sourceName") == SOURCE_NAME for item in items):
        return f"{SOURCE_NAME} was already in OBS's scene {scene!r}; it shows {target.what}"
    session.call("CreateSceneItem", {"sceneName": scene, "sourceName": SOURCE_NAME})
    return f"added the existing {SOURCE_NAME} source ({target.what}) to OBS's scene {scene!r}"


def virtual_camera() -> tuple[str | None, str]:
    """The v4l2loopback device LiveCam's virtual camera writes (opened and closed again,
    as ``livecam doctor`` does), or None and why LiveCam's window is captured instead."""
    from livecam.errors import VirtualCameraUnavailable
    from livecam.sinks.virtualcam import open_camera

    try:
        cam = open_camera(64, 48, 30.0, None, None)
    except VirtualCameraUnavailable as e:
        return None, f"no virtual camera here ({e.message}): LiveCam's window instead"
    try:
        device, backend = str(cam.device), str(cam.backend)
    finally:
        cam.close()
    if backend == "v4l2loopback":
        return device, ""
    return None, f"the virtual camera here is {backend}'s ({device}): LiveCam's window instead"


def add_livecam(session: Session, device: str | None, scene: str | None = None) -> str:
    """``add_source`` of the virtual camera ``device``, or of LiveCam's window (None)."""
    kinds = set(session.call("GetInputKindList").get("inputKinds", []))
    target = camera_target(device) if device else window_target(kinds)
    return add_source(session, target, scene)
