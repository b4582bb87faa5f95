"""tilecourse grader: checks course stages against PyTorch and prints a scorecard."""

__version__ = "0.1.0"
