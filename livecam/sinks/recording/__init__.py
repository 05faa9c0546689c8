"""File sinks: video recordings with their sound, and stills."""
