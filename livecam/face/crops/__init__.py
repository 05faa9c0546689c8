"""Aligned face crops: the templates and the input tensors of the crop-based models."""
