"""Landmarker parts: 5/68/106 points of a face, from its box."""
