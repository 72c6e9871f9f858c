"""A value that fails decryption is bad stored data, not a defect: it is answered 500 and
logged with the partition it came from, never as an unmapped error."""

from __future__ import annotations

import logging

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from ingest.api.errors import install_error_handlers
from spark_log.errors import DecryptionError


def _app() -> FastAPI:
    app = FastAPI()
    install_error_handlers(app)

    @app.get("/v1/streams/{stream}/partitions/{partition}/records")
    async def records(stream: str, partition: int) -> None:
        raise DecryptionError("value at offset 3 failed authentication")

    return app


def test_decryption_failures_are_logged_as_data_errors(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="liftlog.api")
    response = TestClient(_app()).get("/v1/streams/orders/partitions/2/records")
    assert response.status_code == 500
    assert response.json()["error"]["code"] == "decryption_failed"
    assert "unmapped" not in caplog.text
    assert "stored data error" in caplog.text
    assert "stream orders partition 2" in caplog.text
