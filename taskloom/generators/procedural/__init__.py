"""Procedural generation: the offline default backend (world model, primitives, assembler)."""
