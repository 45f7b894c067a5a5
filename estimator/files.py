"""Atomic file output: every file the tool writes (exports, reports, the calibration file)
appears whole or not at all."""

from __future__ import annotations

import os
import re
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

from .errors import EstimatorError


def atomic_write(path: str | Path, write: Callable[[IO[str]], None], inputs: tuple = ()) -> None:
    """Call ``write`` on a temporary file beside ``path``, then rename it over ``path``
    (atomic on POSIX). A symbolic link is written through (the file it points to is
    replaced, the link stays); the new file gets the old one's permissions, or the umask's;
    a path that is one of ``inputs`` is refused. A file that cannot be written is a clear
    error, not a traceback."""
    target = Path(os.path.realpath(path))
    if any(Path(os.path.realpath(i)) == target for i in inputs):
        raise EstimatorError(f"refusing to write {path}: it is an input of this command")
    tmp = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        with os.fdopen(fd, "w", newline="") as f:
            write(f)
        os.chmod(tmp, _mode_for(target))
        os.replace(tmp, target)
    except OSError as e:
        raise EstimatorError(f"cannot write {target}: {e.strerror or e}") from None
    finally:
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)


def _mode_for(target: Path) -> int:
    """The permissions a new file there gets: the replaced file's, else 0666 less the umask
    (mkstemp's 0600 would hide a report from the rest of the team)."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def atomic_write_text(path: str | Path, text: str, inputs: tuple = ()) -> None:
    atomic_write(path, lambda f: f.write(text), inputs)


# Characters that make a spreadsheet run a cell as a formula (OWASP "CSV injection"), with
# their full-width forms, which some spreadsheets also accept.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n", "＝", "＋", "－", "＠")


def csv_safe(value):
    """A cell no spreadsheet will run: text starting with a formula character gets a leading
    quote, line by line (a line break inside a cell starts a new line in some readers)."""
    if not isinstance(value, str):
        return value
    lines = re.split(r"\r\n|\r|\n", value)
    return "\n".join("'" + x if x.startswith(FORMULA_START) else x for x in lines)


def write_csv(rows: list[dict], path: str | Path, inputs: tuple = ()) -> None:
    """Rows as a spreadsheet-safe CSV, written atomically."""
    import pandas as pd

    df = safe_frame(pd.DataFrame(rows))
    atomic_write(path, lambda f: df.to_csv(f, index=False), inputs)


def safe_frame(df):
    """A DataFrame with every cell made spreadsheet-safe (:func:`csv_safe`)."""
    return df.map(csv_safe) if hasattr(df, "map") else df.applymap(csv_safe)
