"""Generated sources: a moving test pattern, portraits as a scene, latency stamps."""
