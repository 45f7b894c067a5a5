"""Atomic file output: every file the tool writes (exports, reports, the calibration file)
appears whole or not at all."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

from .errors import EstimatorError


def atomic_write(path: str | Path, write: Callable[[IO[str]], None]) -> None:
    """Call ``write`` on a temporary file beside ``path``, then rename it over ``path``
    (atomic on POSIX). A file that cannot be written is a clear error, not a traceback."""
    target = Path(path)
    tmp = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        with os.fdopen(fd, "w", newline="") as f:
            write(f)
        os.replace(tmp, target)
    except OSError as e:
        raise EstimatorError(f"cannot write {target}: {e.strerror or e}") from None
    finally:
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write(path, lambda f: f.write(text))
