"""Small file-system helpers shared by the installer and the registry."""

from __future__ import annotations

import os
import secrets

__all__ = ["create_temp_file"]


def create_temp_file(
    directory: str | os.PathLike[str], prefix: str, suffix: str
) -> tuple[int, str]:
    """Create a new, uniquely named file in *directory*; return ``(fd, path)``.

    Like :func:`tempfile.mkstemp`, but the file gets the permissions an
    ordinary new file gets (``0o666`` less the umask) rather than ``0o600``,
    so files moved into a shared ``LIT_HOME`` (downloads, the registry) stay
    readable by the other users who use it.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        path = os.path.join(os.fspath(directory), f"{prefix}{secrets.token_hex(8)}{suffix}")
        try:
            return os.open(path, flags, 0o666), path
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary file name in {os.fspath(directory)}")
