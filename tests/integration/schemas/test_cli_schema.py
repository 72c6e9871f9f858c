"""``liftlog schema ...``, the typed-value flags of ``stream create``/``alter``, and ``publish``
and ``tail`` on a bound stream, as a user types them against a real node."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from liftlog import cli
from spark_log.client import SyncClient
from spark_log.schemas import unframe
from tests.integration.conftest import create_stream

ORDER_V1 = {
    "type": "record",
    "name": "Order",
    "fields": [{"name": "id", "type": "string"}, {"name": "qty", "type": "int"}],
}
ORDER_V2 = {  # BACKWARD compatible: the new field has a default
    **ORDER_V1,
    "fields": [*ORDER_V1["fields"], {"name": "note", "type": ["null", "string"], "default": None}],
}
ORDER_BAD = {  # not BACKWARD compatible: a new field without a default
    **ORDER_V1,
    "fields": [*ORDER_V1["fields"], {"name": "price", "type": "double"}],
}
ORDER_JSON = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {"id": {"type": "string"}, "qty": {"type": "integer"}},
    "required": ["id"],
}


def _file(tmp_path: Path, document: object) -> str:
    path = tmp_path / f"{uuid.uuid4().hex[:6]}.json"
    path.write_text(json.dumps(document))
    return str(path)


def _run(capsys: pytest.CaptureFixture[str], node: Any, *argv: str) -> tuple[int, str, str]:
    code = cli.main([*argv, "--server", node.api_url])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def subject() -> str:
    return f"orders-{uuid.uuid4().hex[:8]}-value"


def test_register_list_show_check_delete(
    node: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path, subject: str
) -> None:
    code, out, _ = _run(capsys, node, "schema", "register", subject, _file(tmp_path, ORDER_V1))
    assert code == 0 and out.startswith(f"subject {subject} version 1 id ")
    first_id = int(out.split()[5])
    code, out, _ = _run(
        capsys, node, "schema", "register", subject, _file(tmp_path, ORDER_V2), "--json"
    )
    registered = json.loads(out)
    assert (registered["version"], registered["schemaType"]) == (2, "AVRO")

    code, out, _ = _run(capsys, node, "schema", "list")
    assert subject in out.splitlines()
    code, out, _ = _run(capsys, node, "schema", "show", subject)
    assert out.splitlines()[0] == f"subject {subject} version 2 id {registered['id']} type AVRO"
    assert out.splitlines()[1] == "versions: 1, 2"
    assert json.loads("\n".join(out.splitlines()[2:]))["fields"][-1]["name"] == "note"
    code, out, _ = _run(capsys, node, "schema", "show", subject, "--version", "1", "--json")
    assert json.loads(out)["id"] == first_id
    code, out, _ = _run(capsys, node, "schema", "show", "--id", str(first_id))
    assert out.splitlines()[0] == f"id {first_id} type AVRO"

    code, out, _ = _run(capsys, node, "schema", "check", subject, _file(tmp_path, ORDER_V2))
    assert code == 0 and out.startswith("compatible")
    code, out, _ = _run(capsys, node, "schema", "check", subject, _file(tmp_path, ORDER_BAD))
    assert code == 1 and out.startswith("incompatible")
    assert "price" in out  # the reason names the field
    code, _, err = _run(capsys, node, "schema", "register", subject, _file(tmp_path, ORDER_BAD))
    assert code == 1 and err.startswith("liftlog: incompatible_schema: ")

    code, out, _ = _run(capsys, node, "schema", "delete", subject, "--version", "2")
    assert code == 0 and out.strip() == f"deleted version 2 of {subject} (versions 2)"
    code, out, _ = _run(capsys, node, "schema", "delete", subject)
    assert out.strip() == f"deleted subject {subject} (versions 1)"
    code, out, _ = _run(capsys, node, "schema", "list", "--deleted", "--json")
    assert subject in json.loads(out)
    code, out, _ = _run(capsys, node, "schema", "delete", subject, "--permanent")
    assert code == 0 and out.startswith("permanently deleted subject")
    code, _, err = _run(capsys, node, "schema", "show", subject)
    assert code == 1 and err.startswith("liftlog: subject_not_found: ")
    assert len(err.strip().splitlines()) == 1


def test_a_json_schema_file_is_registered_as_json(
    node: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path, subject: str
) -> None:
    code, out, _ = _run(capsys, node, "schema", "register", subject, _file(tmp_path, ORDER_JSON))
    assert code == 0 and out.rstrip().endswith("(JSON)")
    code, out, _ = _run(capsys, node, "schema", "show", subject, "--json")
    assert json.loads(out)["schemaType"] == "JSON"


def test_a_missing_schema_file_is_one_line(
    node: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path, subject: str
) -> None:
    code, _, err = _run(capsys, node, "schema", "register", subject, str(tmp_path / "none"))
    assert code == 1 and err.startswith("liftlog: invalid_request: cannot read schema file ")


def test_stream_flags_bind_publish_serialises_and_tail_decodes(
    node: Any,
    api: httpx.Client,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    stream_name: str,
) -> None:
    subject = f"{stream_name}-value"
    assert _run(capsys, node, "schema", "register", subject, _file(tmp_path, ORDER_V1))[0] == 0
    code, out, err = _run(
        capsys, node, "stream", "create", stream_name, "--subject", f"{stream_name}.in",
        "--value-schema-format", "avro",
    )  # fmt: skip
    assert code == 0, err
    assert f"value schema: {subject} (avro), invalid records refused" in out
    described = api.get(f"/v1/streams/{stream_name}").json()
    assert described["spec"]["value_schema"]["subject"] == subject

    code, out, err = _run(capsys, node, "publish", stream_name, '{"id": "o-1", "qty": 2}')
    assert code == 0, err
    with SyncClient(node.api_url) as client:
        stored = client.fetch(stream_name, 0, 0).records[0].value
        framed = unframe(stored)
        assert framed is not None
        assert client.decode_value(stream_name, stored) == {"id": "o-1", "qty": 2}

    code, out, _ = _run(capsys, node, "tail", stream_name)
    assert out.rstrip().split("\t")[-1] == '{"id": "o-1", "qty": 2}'
    code, out, _ = _run(capsys, node, "tail", stream_name, "--json")
    assert json.loads(out)["value"] == {"id": "o-1", "qty": 2}
    code, out, _ = _run(capsys, node, "tail", stream_name, "--raw", "--json")
    assert json.loads(out)["value"] == stored.decode("utf-8", "replace")


def test_alter_merges_the_binding_and_unbinds(
    node: Any,
    api: httpx.Client,
    capsys: pytest.CaptureFixture[str],
    stream_name: str,
) -> None:
    create_stream(api, stream_name, value_schema={"format": "json"})
    dead = f"{stream_name}-dlq"
    create_stream(api, dead)
    code, _, err = _run(
        capsys, node, "stream", "alter", stream_name, "--on-invalid", "dead_letter",
        "--dead-letter-stream", dead,
    )  # fmt: skip
    assert code == 0, err
    binding = api.get(f"/v1/streams/{stream_name}").json()["spec"]["value_schema"]
    assert {k: binding[k] for k in ("subject", "format", "on_invalid", "dead_letter_stream")} == {
        "subject": f"{stream_name}-value",
        "format": "json",  # kept: only the flags given change
        "on_invalid": "dead_letter",
        "dead_letter_stream": dead,
    }
    code, _, err = _run(capsys, node, "stream", "alter", stream_name, "--no-value-schema")
    assert code == 0, err
    assert api.get(f"/v1/streams/{stream_name}").json()["spec"].get("value_schema") is None
