"""cadillac's orchestrator: one subpackage per concern (see ARCHITECTURE.md).

Two small modules sit at the top because every layer uses them: :mod:`orchestrator.errors`
(the one exception meant for people) and :mod:`orchestrator.home` (where state lives).
"""

from pathlib import Path

__version__ = "0.1.0"

SOURCE_ROOT = Path(__file__).resolve().parent.parent
"""The checkout cadillac runs from: the default matrix and the repository improve patches."""
