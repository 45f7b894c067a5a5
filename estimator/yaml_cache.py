"""Preset YAML parsed once per text and remembered between runs, as Python keeps a module's
compiled bytecode: a JSON file per catalogue in the user's cache folder, each entry keyed by
the digest of the text it was parsed from. An edited file has another digest, so it is parsed
afresh; nothing stale is read. Parsing the shipped catalogues' YAML is ~30 ms of every
command (libyaml scans in C, but builds each node in Python); reading them back as JSON, ~1 ms.

Only what JSON holds exactly is kept (a date or a non-string key is parsed every time), and a
cache that cannot be read or written changes nothing but the time. ``PLANNER_CACHE_DIR`` sets
the folder (default ``$XDG_CACHE_HOME/planner``, else ``~/.cache/planner``);
``PLANNER_NO_CACHE=1`` turns it off. Each set of preset folders has its own file; one
unused for 30 days is removed when another cache is written.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

# of the cache files: a change of their layout, or of how a catalogue parses its text (its
# loader is in each cache's name already), bumps it, and the old files are then ignored
FORMAT = 1


def cache_dir() -> Path | None:
    """Where parsed presets are kept (None: not kept)."""
    if os.environ.get("PLANNER_NO_CACHE"):
        return None
    base = os.environ.get("PLANNER_CACHE_DIR")
    if not base:
        root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = os.path.join(root, "planner")
    return Path(base)


class ParsedYaml:
    """The parses of one catalogue's files (``name``: the catalogue and the folders it
    reads), read back where their text was parsed before. Use as a context manager: on
    leaving, the cache holds exactly the texts parsed in it (a line per text: its digest and
    the parse as JSON, each read only when asked for)."""

    def __init__(self, name: str) -> None:
        d = cache_dir()
        tag = f"{name}-f{FORMAT}-yaml{yaml.__version__}"
        self.path = None if d is None else d / f"yaml-{_digest(tag)[:16]}.jsonl"
        self.known = self._read()
        self.used: dict[str, str] = {}

    def _read(self) -> dict[str, str]:
        if self.path is None:
            return {}
        try:
            with open(self.path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except (OSError, ValueError):
            return {}
        pairs = (line.split(" ", 1) for line in lines)
        return {p[0]: p[1] for p in pairs if len(p) == 2}

    def parse(self, text: str, load: Callable[[str], Any]) -> Any:
        """``load(text)``, or what it gave for this very text before (a fresh copy each
        time). What ``load`` raises is raised every time: nothing is kept for it."""
        key = _digest(text)
        raw = self.known.get(key)
        if raw is not None:
            try:
                value = json.loads(raw)
            except (ValueError, RecursionError):  # a damaged line: parse the text again
                pass
            else:
                self.used[key] = raw
                return value
        value = load(text)
        try:
            raw = json.dumps(value, allow_nan=False, separators=(",", ":"))
        except (TypeError, ValueError, RecursionError):  # a date, a set, a deep nest: not kept
            return value
        if json.loads(raw) == value:  # a non-string key would come back a string
            self.used[key] = raw
        return value

    def __enter__(self) -> ParsedYaml:
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is None and self.path is not None and self.used != self.known:
            _write_atomic(self.path, "".join(f"{k} {v}\n" for k, v in self.used.items()))
            _prune(self.path.parent)


# a cache file no command has rewritten or read for this long belongs to preset folders no
# longer used (each set of folders has its own file); a temporary one this old, to a write
# that was killed
UNUSED_DAYS = 30
STALE_TMP_S = 3600.0


def _prune(folder: Path) -> None:
    """Remove the cache files of preset folders unused for :data:`UNUSED_DAYS` and the
    temporaries of killed writes (only when a cache is written: rare)."""
    now = time.time()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for e in entries:
        old = now - UNUSED_DAYS * 86400.0 if e.name.startswith("yaml-") else now - STALE_TMP_S
        if not (e.name.startswith("yaml-") or e.name.startswith(".parsed-")):
            continue
        try:
            st = e.stat()
            if max(st.st_mtime, st.st_atime) < old:
                os.unlink(e.path)
        except OSError:
            pass


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=20).hexdigest()


def _write_atomic(path: Path, text: str) -> None:
    """Write by renaming a finished temporary file (readers see the old file or the new
    one); any failure leaves the cache as it was."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".parsed-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass
