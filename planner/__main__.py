"""`python -m planner` is `gpuplan`."""

from planner.cli.main import main

main()
