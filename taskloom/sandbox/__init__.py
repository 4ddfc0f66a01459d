"""Sandboxes: runtimes that run trials in isolation, and the base image."""
