"""The source's and sink's credential options: resolved once, never shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from datasource.errors import InvalidOptionError
from datasource.options import batch_options, sink_options, stream_options

BASE = {"servers": "http://a:1", "stream": "s"}


def test_a_token_option_reaches_the_credentials_and_stays_out_of_reprs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("LIFTLOG_TOKEN", raising=False)
    monkeypatch.delenv("LIFTLOG_CREDENTIALS_FILE", raising=False)
    for parse in (batch_options, stream_options, sink_options):
        options = parse({**BASE, "TOKEN": "sekrit-token"})  # names are case-insensitive
        assert options.credentials.token == "sekrit-token"
        assert "sekrit-token" not in repr(options)


def test_the_environment_then_a_credentials_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("LIFTLOG_TOKEN", "from-env")
    assert batch_options(BASE).credentials.token == "from-env"
    monkeypatch.delenv("LIFTLOG_TOKEN")
    path = tmp_path / "credentials.toml"
    path.write_text('token = "from-file"\n')
    options = batch_options({**BASE, "credentialsFile": str(path)})
    assert options.credentials.token == "from-file"


def test_half_a_client_certificate_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LIFTLOG_KEY_FILE", raising=False)
    monkeypatch.delenv("LIFTLOG_CREDENTIALS_FILE", raising=False)
    with pytest.raises(InvalidOptionError, match="credentials"):
        batch_options({**BASE, "certFile": "/c.pem"})
