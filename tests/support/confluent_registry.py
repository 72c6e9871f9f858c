"""Confluent's own registry client, pointed at a node: on the secured stack with the admin
token (Confluent's static bearer token) and the stack's CA, from the environment."""

from __future__ import annotations

from typing import Any

from confluent_kafka.schema_registry import SchemaRegistryClient

from spark_log.client.credentials import ClientCredentials


def registry_config(url: str, token: str | None = None) -> dict[str, Any]:
    credentials = ClientCredentials.resolve()
    config: dict[str, Any] = {"url": url}
    bearer = token if token is not None else credentials.token
    if bearer:
        config["bearer.auth.credentials.source"] = "STATIC_TOKEN"
        config["bearer.auth.token"] = bearer
        config["bearer.auth.logical.cluster"] = "liftlog"
    if credentials.ca_file:
        config["ssl.ca.location"] = credentials.ca_file
    return config


def registry_client(url: str, token: str | None = None) -> SchemaRegistryClient:
    return SchemaRegistryClient(registry_config(url, token))
