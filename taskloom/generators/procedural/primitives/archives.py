"""archives primitives (being written)."""
