"""The configuration the docs describe is the typed config the code loads.

- Every key of every ``toml`` block in README.md and docs/*.md exists in
  ``spark_log.config.NodeConfig`` (nested sections included) and shows its default (keys
  without a default, ``broker_id`` and ``data_dir``, show an example), except in
  docs/deployment.md, whose blocks are one deployment's files.
- docs/operations.md's node config lists every key the code has, and loads.
- Every ``section.key`` the prose names exists, and a default it states with it
  (``(default 64 MiB)``, ``, 120 s by default``) is the code's.
- docs/spark.md's option tables name exactly the options the ``liftlog`` data source accepts:
  batch reads, streaming reads (the batch table less what the doc excepts, plus its own table)
  and the sink.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from datasource.options import BATCH_NAMES, LAKE_OPTION_PREFIX, SINK_NAMES, STREAM_NAMES
from spark_log.config import NodeConfig, load_node_config
from tests.support.docs.blocks import REPO, documents, parse

REFERENCE = "docs/operations.md"
# its node.toml blocks are a real deployment's files, not defaults (test_deployment_docs.py
# loads each with the real loader)
DEPLOYMENT = "docs/deployment.md"
_UNITS = {"KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}
_SECONDS = {"ms": 0.001, "s": 1.0, "min": 60.0, "h": 3600.0}


def _fields(cls: type) -> dict[str, dataclasses.Field[Any]]:
    return {f.name: f for f in dataclasses.fields(cls)}


def _section_type(name: str) -> type | None:
    field = _fields(NodeConfig).get(name)
    if field is None or field.default_factory is dataclasses.MISSING:
        return None
    return type(field.default_factory())


def _default(field: dataclasses.Field[Any]) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return dataclasses.MISSING


def code_keys() -> dict[str, Any]:
    """Every config key (``log.fsync`` for nested ones) with its default (MISSING: required)."""
    keys: dict[str, Any] = {}
    for name, field in _fields(NodeConfig).items():
        section = _section_type(name)
        if section is None:
            keys[name] = _default(field)
        else:
            keys.update({f"{name}.{k}": _default(f) for k, f in _fields(section).items()})
    return keys


def _toml_blocks() -> list[tuple[str, str]]:
    return [
        (block.where, block.text)
        for path in documents()
        for block in parse(path).blocks
        if block.lang == "toml"
    ]


def _flatten(data: dict[str, Any]) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            flat.update({f"{key}.{k}": v for k, v in value.items()})
        else:
            flat[key] = value
    return flat


TOML_BLOCKS = _toml_blocks()


def test_docs_have_config_blocks() -> None:
    assert any(where.startswith(REFERENCE) for where, _ in TOML_BLOCKS)


@pytest.mark.parametrize(("where", "text"), TOML_BLOCKS, ids=[w for w, _ in TOML_BLOCKS])
def test_documented_keys_exist_with_their_defaults(where: str, text: str) -> None:
    keys = code_keys()
    documented = _flatten(tomllib.loads(text))
    unknown = sorted(set(documented) - set(keys))
    assert not unknown, f"{where}: keys the config does not have: {unknown}"
    if where.startswith(DEPLOYMENT):
        return
    wrong = {
        key: (value, keys[key])
        for key, value in documented.items()
        if keys[key] is not dataclasses.MISSING
        and not _same(value, keys[key])
        and not _example(keys[key])
    }
    assert not wrong, f"{where}: documented value != code default (doc, code): {wrong}"


def _same(documented: Any, default: Any) -> bool:
    """TOML arrays load as lists; list-valued keys default to tuples (frozen configs)."""
    return documented == (list(default) if isinstance(default, tuple) else default)


def _example(default: Any) -> bool:
    """A free-form table (``lake.storage_options``, empty by default): what a doc shows in it
    is an example of its entries, not a default."""
    return isinstance(default, dict) and not default


def test_reference_lists_every_key_and_loads(tmp_path: Path) -> None:
    where, text = next((w, t) for w, t in TOML_BLOCKS if w.startswith(REFERENCE))
    missing = sorted(set(code_keys()) - set(_flatten(tomllib.loads(text))))
    assert not missing, f"{where}: config keys the docs do not list: {missing}"
    path = tmp_path / "node.toml"
    path.write_text(text)
    config = load_node_config(path)
    assert config.lake.enabled


_PROSE = re.compile(
    r"`(?P<key>(?:log|ingest|lake)\.\w+)`"
    r"(?:[^`(]{0,40}\(default (?P<paren>[^);]+)|,\s*(?P<by>[^,`]+?) by default)?"
)


def _prose_mentions() -> list[tuple[str, str, str | None]]:
    found = []
    for path in documents():
        text = path.read_text()
        rel = str(path.relative_to(REPO))
        for match in _PROSE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append((f"{rel}:{line}", match["key"], match["paren"] or match["by"]))
    return found


def _as_number(text: str, key: str) -> float | None:
    match = re.fullmatch(r"\s*(\d[\d,_]*(?:\.\d+)?)\s*([A-Za-z]*)\b.*", text, re.DOTALL)
    if not match:
        return None
    number = float(match[1].replace(",", "").replace("_", ""))
    unit = match[2]
    if unit in _UNITS:
        return number * _UNITS[unit]
    if unit in _SECONDS:
        scale = _SECONDS[unit]
        return number * scale * (1000 if key.endswith("_ms") else 1)
    return number


def test_prose_names_real_keys_with_their_defaults() -> None:
    keys = code_keys()
    problems = []
    for where, key, stated in _prose_mentions():
        if key not in keys:
            problems.append(f"{where}: `{key}` is not a config key")
            continue
        if stated is None:
            continue
        value = _as_number(stated, key)
        if value is None or keys[key] != pytest.approx(value):
            problems.append(f"{where}: `{key}` default stated {stated!r}, code {keys[key]!r}")
    assert not problems, "\n".join(problems)


SPARK_DOC = REPO / "docs" / "spark.md"
_OPTION_NAME = re.compile(r"`([^`]+)`")
_STREAM_EXCEPT = re.compile(r"Options: everything from batch reads except (?P<names>[^:]+?), plus:")
# ``lake.<NAME>`` stands for every object-store option of the lake (checked names of their own)
_LAKE_ROW = f"{LAKE_OPTION_PREFIX}<NAME>"


def spark_option_tables() -> dict[str, set[str]]:
    """The names in the first column of every ``| option |`` table, by the ``## `` section
    it sits in (one table per section)."""
    tables: dict[str, set[str]] = {}
    section = ""
    in_table = False
    for line in SPARK_DOC.read_text().splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
        if line.startswith("| option |"):
            assert section not in tables, f"docs/spark.md: two option tables in {section!r}"
            tables[section] = set()
            in_table = True
        elif in_table and line.startswith("|") and not line.startswith("|---"):
            tables[section].update(_OPTION_NAME.findall(line.split("|")[1]))
        elif not line.startswith("|"):
            in_table = False
    return tables


def _accepted(names: frozenset[str], lake: bool) -> set[str]:
    return set(names) | ({_LAKE_ROW} if lake else set())


def _streaming_documented(tables: dict[str, set[str]]) -> set[str]:
    match = _STREAM_EXCEPT.search(SPARK_DOC.read_text().replace("\n", " "))
    assert match, "docs/spark.md: the streaming options no longer say what they take from batch"
    excepted = set(_OPTION_NAME.findall(match["names"]))
    return (tables["Batch reads"] - excepted) | tables["Streaming reads"]


def test_spark_option_tables_match_the_options_accepted() -> None:
    tables = spark_option_tables()
    assert set(tables) == {"Batch reads", "Streaming reads", "Writing (the sink)"}, tables
    checks = {
        "spark.read": (tables["Batch reads"], _accepted(BATCH_NAMES, lake=True)),
        "spark.readStream": (_streaming_documented(tables), _accepted(STREAM_NAMES, lake=True)),
        "the sink": (tables["Writing (the sink)"], _accepted(SINK_NAMES, lake=False)),
    }
    problems = [
        f"{where}: documented but not accepted {sorted(documented - accepted)}, "
        f"accepted but not documented {sorted(accepted - documented)}"
        for where, (documented, accepted) in checks.items()
        if documented != accepted
    ]
    assert not problems, "docs/spark.md option tables vs datasource/options.py:\n" + "\n".join(
        problems
    )
