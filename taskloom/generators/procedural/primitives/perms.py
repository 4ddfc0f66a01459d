"""perms primitives (being written)."""
