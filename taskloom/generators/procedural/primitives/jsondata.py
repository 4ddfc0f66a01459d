"""jsondata primitives (being written)."""
