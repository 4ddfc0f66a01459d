"""The skill graph: skills, scenarios and the paths that link them."""
