"""docs/security.md's lake section shows what the code does: its pyarrow snippet, run as
written, reads a file written the way the exporter writes an encrypted stream's files, and so
does Spark's own Parquet reader with the section's Java KMS client and Spark settings."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pyspark
import pytest

from spark_log.crypto import new_data_key
from spark_log.crypto.parquet_kms import PartitionFileCrypto
from spark_log.lake.layout import FILE_SCHEMA
from tests.support.docs.blocks import REPO, Block, parse

SECURITY = REPO / "docs" / "security.md"


SPARK_READ_TIMEOUT_S = 300
JARS = Path(pyspark.__file__).parent / "jars"
DATA_KEY_PLACEHOLDER = "<base64 data key of orders/0>"
# Spark's native scan of the file, in a fresh JVM that has the documented client on its class
# path and the documented settings; prints the rows as JSON.
SPARK_READ = """
import base64, json, sys
from pyspark.sql import SparkSession
classes, path, conf = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
builder = builder.config("spark.driver.extraClassPath", classes)
for key, value in conf.items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
rows = spark.read.parquet(path).orderBy("offset").collect()
print(json.dumps([[r.offset, base64.b64encode(r.value).decode()] for r in rows]))
spark.stop()
"""


def _lake_section_block(lang: str) -> Block:
    text = SECURITY.read_text()
    start = text.index("\n### The lake\n")
    end = text.index("\n## ", start + 1)
    first, last = text[:start].count("\n") + 1, text[:end].count("\n") + 1
    blocks = [b for b in parse(SECURITY).blocks if b.lang == lang and first < b.line < last]
    (block,) = blocks
    return block


def _lake_section_python() -> Block:
    return _lake_section_block("python")


def _lake_file(path: Path, data_key: bytes) -> pa.Table:
    rows = pa.table(
        {
            "offset": pa.array([40, 41], pa.int64()),
            "timestamp": pa.array([1, 2], pa.timestamp("us", tz="UTC")),
            "key": pa.array([b"k", None]),
            "value": pa.array([b"secret", b""]),
            "headers": pa.nulls(2, FILE_SCHEMA.field("headers").type),
            "subject": pa.array(["orders.in", "orders.in"]),
        },
        schema=FILE_SCHEMA,
    )
    crypto = PartitionFileCrypto("orders", 0, data_key)
    pq.write_table(rows, path, encryption_properties=crypto.encryption_properties())
    return rows


def test_the_documented_reader_decrypts_a_lake_file(tmp_path: Path) -> None:
    block = _lake_section_python()
    assert block.marker == "needs"
    data_key = new_data_key()
    rows = _lake_file(tmp_path / "part.parquet", data_key)
    scope = {
        "DATA_KEY_BASE64": base64.b64encode(data_key).decode(),
        "PARQUET_FILE": str(tmp_path / "part.parquet"),
    }
    exec(compile(block.text, block.where, "exec"), scope)  # the docs' own code, as written
    assert scope["table"].equals(rows)


@pytest.mark.skipif(shutil.which("javac") is None, reason="needs a JDK's javac")
def test_spark_reads_a_lake_file_with_the_documented_java_client(tmp_path: Path) -> None:
    """Spark's own Parquet reader (parquet-mr) decrypts our files: the key material is in
    parquet-mr's LocalWrapKmsClient format, and the documented subclass and settings work."""
    java = _lake_section_block("java")
    source = tmp_path / "LiftlogKms.java"
    source.write_text(java.text)
    classes = tmp_path / "classes"
    compiled = subprocess.run(
        ["javac", "-cp", f"{JARS}/*", "-d", str(classes), str(source)],
        capture_output=True,
        text=True,
        timeout=SPARK_READ_TIMEOUT_S,
    )
    assert compiled.returncode == 0, compiled.stderr
    data_key = new_data_key()
    rows = _lake_file(tmp_path / "part.parquet", data_key)
    conf = _documented_spark_conf(base64.b64encode(data_key).decode())
    read = subprocess.run(
        [sys.executable, "-c", SPARK_READ, str(classes), str(tmp_path / "part.parquet"), conf],
        capture_output=True,
        text=True,
        timeout=SPARK_READ_TIMEOUT_S,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
    )
    assert read.returncode == 0, read.stderr[-4000:]
    expected = [[o, base64.b64encode(v).decode()] for o, v in _offsets_values(rows)]
    assert json.loads(read.stdout.strip().splitlines()[-1]) == expected


def _documented_spark_conf(data_key_base64: str) -> str:
    """The section's ``text`` block of Spark settings, with a real data key, as JSON."""
    text = _lake_section_block("text").text
    assert DATA_KEY_PLACEHOLDER in text
    pairs = (line.split(maxsplit=1) for line in text.splitlines())
    conf = {key: value.replace(DATA_KEY_PLACEHOLDER, data_key_base64) for key, value in pairs}
    return json.dumps(conf)


def _offsets_values(rows: pa.Table) -> list[tuple[int, bytes]]:
    return list(zip(rows["offset"].to_pylist(), rows["value"].to_pylist(), strict=True))
