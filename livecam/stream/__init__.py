"""The stream: capture thread, ring, inference thread, output thread, and how a run is timed."""
