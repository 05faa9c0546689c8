"""Recognizer parts: identity embeddings, and metrics built on them."""
