"""config primitives (being written)."""
