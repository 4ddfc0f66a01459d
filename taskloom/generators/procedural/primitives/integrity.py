"""integrity primitives (being written)."""
