"""Across frames: tracking, which faces to swap, which source goes where, feedback."""
