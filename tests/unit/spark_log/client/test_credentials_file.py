"""The credentials file: its typed keys (``server``, the client credentials, ``[lake]``) and
the order in which the tools take the server URL from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_log.client.credentials import ClientCredentials
from spark_log.client.credentials_file import credentials_file_lake, read_credentials_file
from spark_log.client.rest import DEFAULT_SERVER, RestClient
from spark_log.errors import ConfigError


def _file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "credentials.toml"
    path.write_text(text)
    return str(path)


def test_the_file_holds_the_server_the_client_credentials_and_the_lake(tmp_path: Path) -> None:
    path = _file(
        tmp_path,
        'server = "https://127.0.0.1:9644"\ntoken = "llt_x"\n\n'
        '[lake]\nAWS_ACCESS_KEY_ID = "liftlog"\naws_secret_access_key = "s"\n',
    )
    found = read_credentials_file(path)
    assert (found.server, found.token) == ("https://127.0.0.1:9644", "llt_x")
    assert found.lake == {"aws_access_key_id": "liftlog", "aws_secret_access_key": "s"}
    assert "llt_x" not in repr(found) and "'s'" not in repr(found)
    assert credentials_file_lake(None, {"LIFTLOG_CREDENTIALS_FILE": path}) == found.lake
    assert credentials_file_lake(None, {}) == {}


@pytest.mark.parametrize(
    ("text", "named"),
    [('servr = "http://a:1"\n', "servr"), ('[lake]\naws_endpoint = "http://a:1"\n', "lake.")],
)
def test_an_unknown_key_is_an_error_naming_it(tmp_path: Path, text: str, named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        read_credentials_file(_file(tmp_path, text))


def test_the_server_comes_from_the_argument_then_the_environment_then_the_file(
    tmp_path: Path,
) -> None:
    path = _file(tmp_path, 'server = "https://from-file:9644"\n')
    from_file = ClientCredentials.resolve(env={"LIFTLOG_CREDENTIALS_FILE": path})
    assert RestClient(credentials=from_file).servers == ["https://from-file:9644"]
    from_env = ClientCredentials.resolve(
        env={"LIFTLOG_CREDENTIALS_FILE": path, "LIFTLOG_SERVER": "https://from-env:1"}
    )
    assert RestClient(credentials=from_env).servers == ["https://from-env:1"]
    assert RestClient("http://given:2", credentials=from_env).servers == ["http://given:2"]
    assert RestClient(credentials=ClientCredentials()).servers == [DEFAULT_SERVER]
