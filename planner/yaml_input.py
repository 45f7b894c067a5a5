"""Reading a scenario file safely: a regular file of bounded size, in a known encoding, YAML
without duplicate keys, bounded nesting and size. Every refusal names the file (and the line
where there is one) and the bound."""

from __future__ import annotations

import codecs
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml

from .errors import ScenarioError

MAX_BYTES = 1_000_000  # a scenario is a page of YAML; a megabyte is already absurd
MAX_DEPTH = 32  # mappings and lists nested within each other
MAX_NODES = 50_000  # scalars, mappings and lists in the whole document
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


class ScenarioLoader(yaml.SafeLoader):
    """YAML 1.1 as PyYAML reads it, plus YAML 1.2's floats: ``2e6`` is the number people
    mean (YAML 1.1 wants ``2.0e+6`` and would hand over the string "2e6")."""


# the same reading on libyaml's parser, where PyYAML was built with it: a scenario parses in
# about a sixth of the time. Only text it accepts is read with it; anything it refuses is read
# again by ScenarioLoader, whose messages and line numbers are the ones users see
_CLoader = getattr(yaml, "CSafeLoader", None)
FastLoader = type("FastLoader", (_CLoader,), {}) if _CLoader else None

for _cls in (ScenarioLoader, FastLoader):
    if _cls is None:
        continue
    _cls.yaml_implicit_resolvers = {
        k: list(v) for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    _cls.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
        list("-+0123456789"),
    )


def read_text(p: Path) -> str:
    """The file's text: UTF-8 (with or without a byte-order mark), or UTF-16/32 with one."""
    try:
        st = os.stat(p)
    except OSError as e:
        raise ScenarioError(f"cannot read scenario {p}: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ScenarioError(f"cannot read scenario {p}: not a regular file")
    if st.st_size > MAX_BYTES:
        raise ScenarioError(
            f"{p}: {st.st_size:,} bytes; a scenario may be at most {MAX_BYTES:,} bytes"
        )
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise ScenarioError(f"cannot read scenario {p}: {e.strerror}") from None
    encoding = next((enc for bom, enc in _BOMS if raw.startswith(bom)), "utf-8")
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise ScenarioError(
            f"{p}:{line}: not {encoding.upper()} text (byte 0x{raw[e.start]:02x} at offset "
            f"{e.start}); save the file as UTF-8"
        ) from None


def _check_tree(root: yaml.Node, p: Path) -> None:
    """Bounded depth and size; no key twice in one mapping (YAML would keep the last)."""
    stack, count = [(root, 1)], 0
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_NODES:
            raise ScenarioError(f"{p}: more than {MAX_NODES:,} YAML values; too large")
        if depth > MAX_DEPTH:
            line = node.start_mark.line + 1
            raise ScenarioError(f"{p}:{line}: nested more than {MAX_DEPTH} levels deep")
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for k, v in node.value:
                key = getattr(k, "value", None)
                if isinstance(k, yaml.ScalarNode) and key in seen:
                    raise ScenarioError(
                        f"{p}:{k.start_mark.line + 1}: key '{key}' repeats the one at line "
                        f"{seen[key]} (YAML would silently keep only the last)"
                    )
                seen[key] = k.start_mark.line + 1
                stack += [(k, depth + 1), (v, depth + 1)]
        elif isinstance(node, yaml.SequenceNode):
            stack += [(v, depth + 1) for v in node.value]


def load_yaml(p: Path) -> tuple[yaml.Node | None, Any]:
    """(the node tree, for error locations; the data) of a YAML file, checked as above."""
    return parse_yaml(read_text(p), p)


def parse_yaml(text: str, p: Path) -> tuple[yaml.Node | None, Any]:
    """(the node tree; the data) of YAML (or JSON) ``text``, checked as above; errors name
    ``p`` (a file, or what the text came from) and the line."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise ScenarioError(f"{p}: a scenario may be at most {MAX_BYTES:,} bytes")
    if FastLoader is not None:
        fast = FastLoader(text)
        try:
            node = fast.get_single_node()
            if node is not None:
                _check_tree(node, p)
            return node, fast.construct_document(node) if node is not None else None
        except (yaml.YAMLError, RecursionError, ScenarioError):
            pass  # read again below, for the message (and line) users see
        finally:
            fast.dispose()
    loader = None
    try:
        loader = ScenarioLoader(text)  # the reader refuses control characters here already
        node = loader.get_single_node()
        if node is not None:
            _check_tree(node, p)
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as e:
        m = e.problem_mark
        where = f"{p}:{m.line + 1}" if m else str(p)
        raise ScenarioError(f"{where}: malformed YAML: {e.problem}") from None
    except yaml.reader.ReaderError as e:  # a character YAML does not allow
        line = text[: e.position].count("\n") + 1
        raise ScenarioError(
            f"{p}:{line}: character U+{int(e.character):04X} is not allowed in YAML text"
        ) from None
    except yaml.YAMLError as e:
        raise ScenarioError(f"{p}: malformed YAML: {e}") from None
    except RecursionError:
        raise ScenarioError(f"{p}: nested more than {MAX_DEPTH} levels deep") from None
    finally:
        if loader is not None:
            loader.dispose()
    return node, data
