"""``python -m orchestrator`` runs the same command line as ``cadillac``."""

from orchestrator.cli import entry

entry()
