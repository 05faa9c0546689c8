"""The stream: capture thread, ring, inference thread, output thread, how a run is timed,
and `verify` (is a file or camera marked as AI-modified)."""
