"""The one exception type the CLI turns into a clear one-line error (bad input, bad files)."""


class CampError(Exception):
    """A user-facing error: bad arguments, malformed config or data files, unknown names."""
