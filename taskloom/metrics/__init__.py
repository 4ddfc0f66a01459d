"""Measurements of tasks and corpora: diversity metrics and shell-script complexity."""
