"""The one exception meant for people: its message is printed as a single line."""


class CadillacError(Exception):
    """Something the user can fix; the CLI prints ``cadillac: error: <message>`` and exits 1."""
