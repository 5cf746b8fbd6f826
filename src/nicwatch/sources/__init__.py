"""The only code that talks to the kernel. Each module wraps one kernel interface and
returns the records of nicwatch.model."""

import errno


def errno_name(number: int | None) -> str:
    """errno name as the kernel headers spell it (EOPNOTSUPP, not Python's alias ENOTSUP)."""
    if number == errno.EOPNOTSUPP:
        return "EOPNOTSUPP"
    return errno.errorcode.get(number, str(number))
