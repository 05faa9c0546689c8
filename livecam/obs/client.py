"""One connection to OBS's WebSocket server through obsws-python: ``connect`` opens it
(with the request client, and the event client when events are wanted), ``Session.call``
sends one request, each with the connection's timeout. Every failure is an ``ObsError``
of one line with its fix; a lost connection is ``ObsLost``.

obsws-python logs the password at INFO when it connects (and puts it in its clients'
``repr``) and a traceback for a refused connection or a failed request: its loggers are
switched off (``quiet_obsws_logs``), and LiveCam's own lines say what went wrong without
the secret.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from livecam.errors import LivecamError, one_line

log = logging.getLogger(__name__)

SETTINGS_FIX = (
    "in OBS: Tools > WebSocket Server Settings: tick Enable WebSocket server, and check "
    "the port (--obs-port, [obs] port)"
)
PASSWORD_FIX = (
    "copy the password from OBS (Tools > WebSocket Server Settings > Show Connect Info) "
    "and run `livecam obs password` (or set LIVECAM_OBS_PASSWORD)"
)
INSTALL_FIX = "pip install 'livecam[obs]' (obsws-python)"

#: obs-websocket's request status codes LiveCam words itself
NOT_FOUND = 600
ALREADY_EXISTS = 601
INVALID_STATE = 604


class ObsError(LivecamError):
    """Talking to OBS failed; the message is one line, the hint the fix."""


class ObsLost(ObsError):
    """The connection to OBS is gone (OBS quit or restarted, or stopped answering)."""


class RequestFailed(ObsError):
    """OBS answered a request with an error (``code``: obs-websocket's status code)."""

    def __init__(self, request: str, code: int, comment: str) -> None:
        super().__init__(f"OBS refused {request}: {comment or f'status {code}'}")
        self.request = request
        self.code = code
        self.comment = comment


def quiet_obsws_logs() -> None:
    """Keep obsws-python's log records (the password, tracebacks) from being made at all:
    its top logger gets a level above every record's, which the loggers it makes per
    client inherit, and passes nothing up."""
    top = logging.getLogger("obsws_python")
    top.setLevel(logging.CRITICAL + 1)
    top.propagate = False


def _library() -> Any:
    try:
        import obsws_python
    except ImportError:
        raise ObsError("the OBS client library is not installed", INSTALL_FIX) from None
    quiet_obsws_logs()
    return obsws_python


def connect_error(error: BaseException, host: str, port: int, timeout_s: float) -> ObsError:
    """``error`` from opening the connection, as one line with its fix."""
    where = f"{host}:{port}"
    text = str(error)
    if isinstance(error, ConnectionRefusedError):
        return ObsError(
            f"OBS is not running, or its WebSocket server is off or on another port "
            f"(nothing answers at {where})",
            f"start OBS; {SETTINGS_FIX}",
            panel_hint="start OBS; in OBS: Tools > WebSocket Server Settings: tick Enable "
            "WebSocket server, and check the port here",
        )
    if "no password provided" in text:
        return ObsError(
            f"OBS at {where} asks for a WebSocket password, LiveCam has none", PASSWORD_FIX
        )
    if "failed to identify" in text or "authentication" in text.lower():
        return ObsError(f"OBS at {where} refused the WebSocket password", PASSWORD_FIX)
    if isinstance(error, socket.gaierror):
        return ObsError(f"unknown OBS host {host!r}", "check --obs-host ([obs] host)")
    if isinstance(error, TimeoutError | socket.timeout) or "timed out" in text.lower():
        return ObsError(
            f"OBS at {where} did not answer within {timeout_s:g} s",
            f"check that OBS runs there and that no firewall blocks port {port}",
        )
    if isinstance(error, OSError) and error.strerror:
        return ObsError(f"cannot reach OBS at {where}: {error.strerror}", SETTINGS_FIX)
    return ObsError(
        f"{where} does not answer as OBS's WebSocket server (obs-websocket 5): "
        f"{one_line(text) or type(error).__name__}",
        f"OBS 28 or later has it; {SETTINGS_FIX}",
    )


@dataclass
class Session:
    """An open connection: ``call`` sends one request; ``alive`` is False once the event
    client lost the connection (OBS quit)."""

    requests: Any = field(repr=False)  # obsws-python's repr shows the password
    events: Any | None = field(repr=False)
    timeout_s: float = 2.0

    def call(self, request: str, data: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Send ``request`` and return its response data ({} when none). RequestFailed
        when OBS refuses it, ObsLost when the connection is gone or OBS did not answer
        within the timeout."""
        lib = _library()
        try:
            response = self.requests.send(request, dict(data) if data else None, raw=True)
        except lib.error.OBSSDKRequestError as e:
            raise RequestFailed(request, int(e.code), _comment(e)) from None
        except lib.error.OBSSDKTimeoutError:
            raise ObsLost(
                f"OBS did not answer {request} within {self.timeout_s:g} s", "check that OBS runs"
            ) from None
        except Exception as e:  # a closed socket, a half-read frame: the connection is gone
            raise ObsLost(f"the connection to OBS was lost ({one_line(repr(e))})") from None
        return dict(response) if isinstance(response, Mapping) else {}

    @property
    def alive(self) -> bool:
        worker = getattr(self.events, "worker", None) if self.events is not None else None
        return worker is None or bool(worker.is_alive())

    def close(self) -> None:
        """Close both clients (never raises)."""
        for client in (self.events, self.requests):
            if client is None:
                continue
            try:
                client.disconnect()
            except Exception as e:
                log.debug("closing the OBS connection: %r", e)


def _comment(error: Any) -> str:
    text = str(error)
    _, _, comment = text.partition("With message: ")
    return comment.rstrip(".") if comment else ""


def connect(
    host: str,
    port: int,
    password: str,
    timeout_s: float,
    handlers: Mapping[str, Callable[[Any], None]] | None = None,
) -> Session:
    """Connect to OBS at ``host``:``port``; with ``handlers`` (obs-websocket event name in
    snake case, e.g. ``record_state_changed`` -> callback of the event's data) an event
    client follows OBS's output events too. ObsError (one line, with the fix) when it
    cannot."""
    lib = _library()
    try:
        requests = lib.ReqClient(host=host, port=port, password=password, timeout=timeout_s)
    except Exception as e:
        raise connect_error(e, host, port, timeout_s) from None
    session = Session(requests, None, timeout_s)
    if not handlers:
        return session
    try:
        subs = lib.Subs.GENERAL | lib.Subs.OUTPUTS
        events = lib.EventClient(
            host=host, port=port, password=password, timeout=timeout_s, subs=subs
        )
    except Exception as e:
        session.close()
        raise connect_error(e, host, port, timeout_s) from None
    events.callback.register([_named(f"on_{name}", fn) for name, fn in handlers.items()])
    session.events = events
    return session


def _named(name: str, fn: Callable[[Any], None]) -> Callable[[Any], None]:
    """``fn`` under the name obsws-python dispatches events by, never raising into its
    event thread (which would stop it)."""

    def handler(data: Any) -> None:
        try:
            fn(data)
        except Exception as e:
            log.warning("handling OBS's event %s raised %r", name, e)

    handler.__name__ = name
    return handler
