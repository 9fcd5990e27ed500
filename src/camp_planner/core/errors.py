"""The one exception type the CLI turns into a clear one-line error (bad input, bad files)."""

from collections.abc import Iterable


class CampError(Exception):
    """A user-facing error: bad arguments, malformed config or data files, unknown names."""


def reject_unknown(data: Iterable[str], known: Iterable[str], what: str) -> None:
    """Raise a :class:`CampError` naming every key of ``data`` not in ``known``."""
    unknown = set(data) - set(known)
    if unknown:
        raise CampError(f"unknown {what} settings: {', '.join(sorted(unknown))}")
