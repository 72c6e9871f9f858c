"""The app-wide strict-parameter check: declared query names walked once per route, and a
body read only when the request has one."""

from __future__ import annotations

import pytest
from fastapi import Depends, FastAPI
from fastapi.testclient import TestClient

import ingest.api.strict_params as strict
from spark_log.errors import InvalidRequestError


def _app() -> FastAPI:
    app = FastAPI(dependencies=[Depends(strict.refuse_unknown_params)])

    @app.get("/items")
    async def items(offset: int = 0) -> dict[str, int]:
        return {"offset": offset}

    @app.post("/ping")
    async def ping() -> dict[str, bool]:
        return {"ok": True}

    return app


def test_declared_query_names_are_walked_once_per_route(monkeypatch):
    walks = []
    real = strict._query_names

    def counting(dependant):
        walks.append(dependant)
        return real(dependant)

    monkeypatch.setattr(strict, "_query_names", counting)
    client = TestClient(_app())
    for offset in range(5):
        assert client.get("/items", params={"offset": offset}).json() == {"offset": offset}
    top_level_walks = len(walks)
    client.get("/items", params={"offset": 9})
    assert len(walks) == top_level_walks  # nothing walked again
    with pytest.raises(InvalidRequestError, match="ofset"):
        client.get("/items", params={"ofset": 1})


def test_the_body_is_read_only_when_there_is_one(monkeypatch):
    refused = []
    real = strict._refuse_body

    def counting(body, request, route):
        refused.append(body)
        return real(body, request, route)

    monkeypatch.setattr(strict, "_refuse_body", counting)
    client = TestClient(_app())
    assert client.get("/items").status_code == 200
    assert client.post("/ping").status_code == 200
    assert refused == []
    with pytest.raises(InvalidRequestError, match="'x'"):
        client.post("/ping", json={"x": 1})
    with pytest.raises(InvalidRequestError, match="takes no body"):
        client.post("/ping", content=iter([b"junk"]))  # chunked: no content-length
    assert len(refused) == 2
