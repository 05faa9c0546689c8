"""Detector parts: find faces (boxes, scores, 5 keypoints) in frames."""
