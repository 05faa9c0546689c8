"""Paste-back: blender parts and the colour and mask helpers they use."""
