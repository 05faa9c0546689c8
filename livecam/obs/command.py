"""``livecam obs`` (wired into the command line by ``livecam.cli.main``): LiveCam's side of
OBS Studio from the terminal.

* ``add-source``: LiveCam's virtual camera (or, where none can start, its window) as a
  source of OBS's current scene, once (``livecam.obs.source``).
* ``status``: the connection, OBS's version and outputs, and the audio sync offset of
  the microphone inputs that lip sync would delay.
* ``password``: keep OBS's WebSocket password in LiveCam's private password file (read
  from standard input, never from the command line, where other users see it).
"""

from __future__ import annotations

import argparse
import dataclasses
import getpass
import sys
from typing import Any

from livecam.config.obs import ObsConfig
from livecam.config.schema import Config
from livecam.errors import ConfigError
from livecam.obs.client import RequestFailed, Session, connect
from livecam.obs.lipsync import AudioSync, SyncProblem
from livecam.obs.secret import password_file, read_password, save_password
from livecam.obs.source import add_livecam, virtual_camera


def add_obs_command(sub: Any) -> None:
    """The ``obs`` command and its subcommands."""
    obs = sub.add_parser(
        "obs",
        help="OBS Studio: add LiveCam to a scene, check the connection, keep the password",
        description="Talk to OBS Studio through its WebSocket server (obs-websocket 5, OBS "
        "28 and later; Tools > WebSocket Server Settings). See docs/obs.md.",
    )
    commands = obs.add_subparsers(dest="obs_command", required=True)
    add = commands.add_parser(
        "add-source",
        help="add LiveCam's virtual camera (or its window) to OBS's current scene, once",
        description="Add a source named LiveCam to OBS's current scene (or --scene): the "
        "v4l2loopback device LiveCam writes, or, where no virtual camera can start, a "
        "window capture of LiveCam's window. Run it again after a device change: the "
        "source is pointed at the new one, never added twice.",
    )
    add.add_argument("--scene", help="the scene to add it to (default: the current one)")
    which = add.add_mutually_exclusive_group()
    which.add_argument(
        "--device", help="the virtual camera device (default: the one LiveCam opens)"
    )
    which.add_argument("--window", action="store_true", help="capture LiveCam's window instead")
    status = commands.add_parser(
        "status", help="connect to OBS and show its version, outputs and microphone offsets"
    )
    password = commands.add_parser(
        "password",
        help="keep OBS's WebSocket password (typed or piped in) in a private file",
        description="Read the password from standard input (typed without echo on a "
        f"terminal) and keep it in {password_file()} (readable by you only). "
        "$LIVECAM_OBS_PASSWORD, when set, is used instead.",
    )
    password.add_argument("--clear", action="store_true", help="forget the kept password")
    for p in (add, status):
        p.add_argument("--config", metavar="FILE.toml", help="take [obs] host and port from it")
        p.add_argument("--obs-host", help="OBS's host (default: [obs] host, localhost)")
        p.add_argument("--obs-port", type=int, help="OBS's WebSocket port (default 4455)")
    for p in (add, status, password):
        p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    add.set_defaults(func=cmd_add_source)
    status.set_defaults(func=cmd_status)
    password.set_defaults(func=cmd_password)


def obs_settings(args: argparse.Namespace) -> ObsConfig:
    """``[obs]`` of ``--config`` (or the defaults) with ``--obs-host`` and ``--obs-port``."""
    cfg = Config.load(args.config).obs if args.config else ObsConfig()
    changes: dict[str, Any] = {}
    if args.obs_host is not None:
        changes["host"] = args.obs_host
    if args.obs_port is not None:
        changes["port"] = args.obs_port
    return dataclasses.replace(cfg, **changes)  # validated again


def open_session(cfg: ObsConfig) -> Session:
    return connect(cfg.host, cfg.port, read_password(), cfg.timeout_s)


def cmd_add_source(args: argparse.Namespace) -> int:
    cfg = obs_settings(args)
    device, why = (args.device, "") if args.device or args.window else virtual_camera()
    if why:
        print(why)
    session = open_session(cfg)
    try:
        print(add_livecam(session, device, args.scene))
    finally:
        session.close()
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    cfg = obs_settings(args)
    session = open_session(cfg)
    try:
        version = session.call("GetVersion")
        print(
            f"connected to OBS {version.get('obsVersion')} (obs-websocket "
            f"{version.get('obsWebSocketVersion')}) at {cfg.host}:{cfg.port}"
        )
        for name, request in (
            ("streaming", "GetStreamStatus"),
            ("recording", "GetRecordStatus"),
            ("virtual camera", "GetVirtualCamStatus"),
        ):
            try:
                active = session.call(request).get("outputActive", False)
            except RequestFailed:
                active = None
            print(f"  {name}: {'n/a' if active is None else 'on' if active else 'off'}")
        try:
            inputs = AudioSync(cfg.audio_inputs).mic_inputs(session)
        except SyncProblem as e:
            print(f"  lip sync: {e.message}\n  fix: {e.hint}")
            return 0
        for name in inputs:
            got = session.call("GetInputAudioSyncOffset", {"inputName": name})
            print(f"  microphone {name!r}: sync offset {got.get('inputAudioSyncOffset')} ms")
    finally:
        session.close()
    return 0


def cmd_password(args: argparse.Namespace) -> int:
    if args.clear:
        save_password("")
        print(f"forgot the OBS password ({password_file()} removed)")
        return 0
    if sys.stdin.isatty():
        text = getpass.getpass("OBS WebSocket password: ")
    else:
        text = sys.stdin.readline().rstrip("\r\n")
    if not text:
        raise ConfigError(
            "no password was given", "type it, or pipe it in: livecam obs password < FILE"
        )
    path = save_password(text)
    print(f"kept the OBS password in {path} (readable by you only)")
    return 0
