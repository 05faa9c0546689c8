"""LiveCam and OBS Studio in step, through obs-websocket 5 (the obsws-python client).

* ``link``: the ``ObsLink`` thread of a running stream: connects (and reconnects by
  itself), follows OBS's stream, recording and virtual-camera state from its events, and
  keeps the microphone's audio sync offset at LiveCam's measured latency (``lipsync``).
* ``client``: the connection and one request with a timeout, every failure as one line
  with its fix (``ObsError``); obsws-python's own logging (which prints the password) is
  kept quiet.
* ``state``: what the status line and the panel show (``ObsState``).
* ``source``: ``livecam obs add-source``: LiveCam's camera (or its window) as a source of
  the current scene, added once.
* ``secret``: the WebSocket password, kept out of config files and logs.
* ``command``: the ``livecam obs`` command (add-source, status, password).

Every call to OBS runs on the link's own thread (or the caller's, for add-source), never
on the capture, inference or output threads.
"""
