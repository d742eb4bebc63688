"""durations: parse and format lengths of time written like ``1h30m``."""

from durations.core import UNITS, format_duration, parse_duration

__all__ = ["UNITS", "format_duration", "parse_duration"]
__version__ = "0.3.0"
