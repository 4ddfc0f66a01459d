"""csvdata primitives (being written)."""
