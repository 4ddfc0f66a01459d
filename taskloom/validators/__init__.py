"""Validators: structure, solvability, leakage, and (later) judge and diversity checks."""
