"""Bundled demo portraits and their attribution (ATTRIBUTION.md), and the offline preset's
face detector (YuNet 2023mar, ``face_detection_yunet_2023mar.onnx``, with its licence),
installed as the package ``livecam.assets`` and read with ``importlib.resources``."""
