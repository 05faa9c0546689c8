"""LiveCam's Qt panel (preview, FPS, latency, VRAM, model and quality toggles, hotkeys).

It talks to the pipeline only through ``livecam.app.App``; ``livecam`` never imports Qt.
"""
