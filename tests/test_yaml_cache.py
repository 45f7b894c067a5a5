"""Parsed preset YAML remembered between runs: the same parse for the same text, a fresh
parse for an edited one, and a cache that cannot be used changes nothing but the time."""

import datetime
import os
import time

import pytest

from estimator import catalog
from estimator.yaml_cache import ParsedYaml


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("PLANNER_CACHE_DIR", str(d))
    monkeypatch.delenv("PLANNER_NO_CACHE", raising=False)
    return d


def _count_parses(monkeypatch) -> list:
    seen = []
    real = catalog._yaml

    def counted(text):
        seen.append(text)
        return real(text)

    monkeypatch.setattr(catalog, "_yaml", counted)
    return seen


def test_a_catalogue_read_again_is_read_from_the_cache_and_equals_a_parse(cache_dir, monkeypatch):
    fresh = catalog.read_catalogue("gpus", ())
    assert list(cache_dir.glob("yaml-*.jsonl"))
    parses = _count_parses(monkeypatch)
    again = catalog.read_catalogue("gpus", ())
    assert parses == [] and again == fresh
    monkeypatch.setenv("PLANNER_NO_CACHE", "1")
    assert catalog.read_catalogue("gpus", ()) == fresh and len(parses) == len(fresh)


def test_an_edited_file_is_parsed_afresh_its_old_parse_dropped(cache_dir, tmp_path, monkeypatch):
    user = tmp_path / "presets" / "servers"
    user.mkdir(parents=True)
    f = user / "mine.yaml"
    f.write_text("- {name: a, n: 1}\n")
    dirs = (str(tmp_path / "presets"),)
    assert catalog.read_catalogue("servers", dirs)[-1][1] == [{"name": "a", "n": 1}]
    f.write_text("- {name: a, n: 2}\n")
    parses = _count_parses(monkeypatch)
    assert catalog.read_catalogue("servers", dirs)[-1][1] == [{"name": "a", "n": 2}]
    assert parses == ["- {name: a, n: 2}\n"]  # the shipped files came from the cache
    (cache,) = [p for p in cache_dir.glob("*.jsonl") if '"n":' in p.read_text()]
    assert '"n":2' in cache.read_text() and '"n":1' not in cache.read_text()


def test_values_json_cannot_hold_are_parsed_every_time(cache_dir):
    calls = []

    def load(text):
        calls.append(text)
        return {"on": datetime.date(2025, 1, 1)} if "date" in text else {1: "int key"}

    for _ in range(2):
        with ParsedYaml("odd") as c:
            assert c.parse("date", load) == {"on": datetime.date(2025, 1, 1)}
            assert c.parse("keys", load) == {1: "int key"}
    assert len(calls) == 4


def test_a_damaged_or_unwritable_cache_changes_nothing(cache_dir, tmp_path, monkeypatch):
    fresh = catalog.read_catalogue("gpus", ())
    for f in cache_dir.glob("*.jsonl"):
        f.write_text("not json at all\n" + f.read_text()[:-40] + "\n")  # a cut last line
    assert catalog.read_catalogue("gpus", ()) == fresh
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("PLANNER_CACHE_DIR", str(blocked / "sub"))  # cannot be made
    assert catalog.read_catalogue("gpus", ()) == fresh


def test_a_parse_error_is_raised_every_time_with_file_and_line(cache_dir, tmp_path):
    user = tmp_path / "presets" / "gpus"
    user.mkdir(parents=True)
    (user / "bad.yaml").write_text("name: x\n  - broken: [\n")
    for _ in range(2):
        with pytest.raises(catalog.EstimatorError, match=r"bad\.yaml:\d+:\d+: malformed YAML"):
            catalog.read_catalogue("gpus", (str(tmp_path / "presets"),))


def test_caches_of_folders_long_unused_and_killed_writes_are_pruned(cache_dir):
    cache_dir.mkdir(parents=True)
    old, fresh, tmp = (cache_dir / n for n in ("yaml-old.jsonl", "yaml-new.jsonl", ".parsed-x.tmp"))
    for f in (old, fresh, tmp):
        f.write_text("")
    past = time.time() - 40 * 86400
    os.utime(old, (past, past))
    os.utime(tmp, (time.time() - 7200, time.time() - 7200))
    catalog.read_catalogue("gpus", ())  # writes this catalogue's cache, then prunes
    assert not old.exists() and not tmp.exists() and fresh.exists()
