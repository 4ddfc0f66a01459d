"""`python -m taskloom.cli`."""

from taskloom.cli import main

main()
