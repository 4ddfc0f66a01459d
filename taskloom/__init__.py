"""taskloom: synthesize verified, containerized terminal tasks for AI agents."""
