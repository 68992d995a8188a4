"""Removing a directory tree that hostile code built, without ever raising.

``shutil.rmtree`` recurses once per level (a tree 3,000 deep raises ``RecursionError``) and its paths outgrow
``PATH_MAX``. ``remove_tree`` instead moves every subdirectory it meets up to the top level under a fresh short
name, so no path is ever longer than two names and no stack grows, then deletes the emptied directories.
Directories without write or search permission are opened up first. What cannot be removed is logged.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import uuid

logger = logging.getLogger(__name__)


def remove_tree(top: str) -> None:
    """Delete ``top`` and everything under it (symbolic links are removed, never followed); never raises."""
    try:
        _remove(top)
    except Exception:  # noqa: BLE001 - cleanup must never fail the caller
        logger.exception("could not remove %s", top)
        return
    if os.path.lexists(top):
        logger.warning("could not remove all of %s", top)


def _remove(top: str) -> None:
    if not os.path.lexists(top):
        return
    if not os.path.isdir(top) or os.path.islink(top):
        os.unlink(top)
        return
    pending = [top]
    emptied: list[str] = []
    while pending:
        directory = pending.pop()
        with contextlib.suppress(OSError):
            os.chmod(directory, stat.S_IRWXU)
        try:
            entries = list(os.scandir(directory))
        except OSError as error:
            logger.warning("cannot list %s: %s", directory, error)
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    flattened = os.path.join(top, f".rm-{uuid.uuid4().hex}")
                    os.rename(entry.path, flattened)
                    pending.append(flattened)
                else:
                    os.unlink(entry.path)
            except OSError as error:
                logger.warning("cannot remove %s: %s", entry.path, error)
        emptied.append(directory)
    for directory in reversed(emptied):
        with contextlib.suppress(OSError):
            os.rmdir(directory)
