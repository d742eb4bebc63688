"""cadillac's orchestrator: the command line, the home folder, and (later) the build loop."""

__version__ = "0.1.0"
