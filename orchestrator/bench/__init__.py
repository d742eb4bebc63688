"""The judge: benchmark matrices, hidden-check scoring and the rule that decides a patch.

The bounds of a matrix run live here, where the command line reads them without loading
the judge (``--help`` stays fast).
"""

MAX_REPEATS = 100
"""The most builds of one task a matrix run makes (``--repeats``): beyond it a run is a
mistake, and would take hours per task and repeat."""
MAX_JOBS = 16
"""The most builds a matrix run makes at once (``--jobs``)."""
