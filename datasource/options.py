"""The data source's options, checked once and turned into frozen, typed settings.

Spark hands options over as a case-insensitive map of strings. They are validated before any
work is planned, and unknown names are an error: a misspelt ``startingOffset`` would otherwise
silently read from the default (the same habit as the node config). Kafka's names are used
wherever Kafka has one, so a Kafka query ports by changing the format and the servers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypedDict

from datasource.durations import parse_duration_s
from datasource.errors import InvalidOptionError
from datasource.offsets import EARLIEST, LATEST, OffsetSpec, parse_offset_spec
from spark_log.client.credentials import ClientCredentials
from spark_log.client.rest import parse_servers
from spark_log.errors import ConfigError, InvalidRequestError
from spark_log.storage_options import checked_storage_options

DEFAULT_MAX_RECORDS_PER_PARTITION = 5_000_000
"""Records one Spark task reads at most (Kafka's ``maxRecordsPerPartition``, which Kafka leaves
unbounded). Each task of a Python source pays a fixed cost for its worker round trip and Arrow
stream, about 40 ms on 2 cores; a 10M-record scan ran 15% faster in 5M-record tasks than in
1M-record ones (same session, interleaved). ``minPartitions`` asks for more, smaller tasks when
there are more cores than partitions."""
DEFAULT_MAX_TRIGGER_DELAY = "15m"
"""Kafka's default for ``maxTriggerDelay``."""
DEFAULT_ACK_TIMEOUT_S = 30.0

LAKE_OPTION_PREFIX = "lake."
"""``.option("lake.AWS_ACCESS_KEY_ID", ...)``: the lake's object-store options (Kafka's
``kafka.`` prefix idea), names from ``spark_log.storage_options``. They reach the planner and
the tasks only, never the nodes; absent ones come from the standard AWS environment."""
SPARK_PROVIDED = frozenset({"path", "checkpointLocation"})
"""Names Spark itself may add to the options (``load(path)``, a streaming sink's checkpoint)."""
CREDENTIAL_NAMES = frozenset({"token", "caFile", "certFile", "keyFile", "credentialsFile"})
"""What the source and sink present to the nodes (each falls back to its ``LIFTLOG_*``
variable, then the credentials file; spark_log.client.credentials). Spark redacts option values
whose name holds ``token`` in plans and the UI, and the resolved token stays out of reprs."""
_SOURCE_NAMES = CREDENTIAL_NAMES | frozenset(
    {
        "servers",
        "stream",
        "lakeUri",
        "includeHeaders",
        "failOnDataLoss",
        "partitions",
        "maxRecordsPerPartition",
        "minPartitions",
        "startingOffsets",
        "startingTimestamp",
        "valueFormat",
    }
)
BATCH_NAMES = _SOURCE_NAMES | {"endingOffsets", "endingTimestamp", "filterPushdown"}
STREAM_NAMES = _SOURCE_NAMES | {"maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay"}
SINK_NAMES = CREDENTIAL_NAMES | frozenset(
    {"servers", "stream", "idempotent", "idempotencyKey", "natsUrl", "ackTimeoutMs", "valueFormat"}
)
TYPED = "typed"
BINARY = "binary"
VALUE_FORMATS = (TYPED, BINARY)
"""``valueFormat``: a bound stream's values as typed columns, or as bytes (Kafka's columns)."""


@dataclass(frozen=True)
class SourceOptions:
    """What batch and streaming reads share."""

    servers: str
    stream: str
    lake_uri: str | None
    lake_options: tuple[tuple[str, str], ...]
    """``lake.<NAME>`` options, as (lower-case name, value) pairs."""
    include_headers: bool
    fail_on_data_loss: bool
    partitions: tuple[int, ...] | None
    max_records_per_partition: int
    min_partitions: int | None
    starting: OffsetSpec
    starting_timestamp_ms: int | None
    credentials: ClientCredentials = field(default_factory=ClientCredentials, kw_only=True)
    value_format: str | None = field(default=None, kw_only=True)
    """``typed`` or ``binary`` (None: typed for a bound stream, binary for any other)."""


class _SourceFields(TypedDict):
    """``SourceOptions``'s fields as keywords for its subclasses (mypy checks that the two
    agree at every ``**`` below)."""

    servers: str
    stream: str
    lake_uri: str | None
    lake_options: tuple[tuple[str, str], ...]
    include_headers: bool
    fail_on_data_loss: bool
    partitions: tuple[int, ...] | None
    max_records_per_partition: int
    min_partitions: int | None
    starting: OffsetSpec
    starting_timestamp_ms: int | None
    credentials: ClientCredentials
    value_format: str | None


@dataclass(frozen=True)
class BatchOptions(SourceOptions):
    ending: OffsetSpec
    ending_timestamp_ms: int | None
    filter_pushdown: bool


@dataclass(frozen=True)
class StreamOptions(SourceOptions):
    max_offsets_per_trigger: int | None
    min_offsets_per_trigger: int | None
    max_trigger_delay_s: float


@dataclass(frozen=True)
class SinkOptions:
    servers: str
    stream: str
    idempotent: bool
    idempotency_key: str | None
    nats_url: str | None
    ack_timeout_s: float
    credentials: ClientCredentials = field(default_factory=ClientCredentials, kw_only=True)
    value_format: str | None = field(default=None, kw_only=True)
    """``typed``: rows' columns are the value's fields; ``binary``: a ``value`` column (None:
    typed for a bound stream whose DataFrame has no ``value`` column)."""


def batch_options(options: Mapping[str, str]) -> BatchOptions:
    """Options of ``spark.read.format("liftlog")`` (start defaults to earliest, end to latest)."""
    opts = _lowered(options, BATCH_NAMES, "spark.read")
    common = _source_fields(opts, default_start=EARLIEST)
    return BatchOptions(
        **common,
        ending=parse_offset_spec(
            opts.get("endingoffsets"), common["stream"], "endingOffsets", LATEST
        ),
        ending_timestamp_ms=_optional_int(opts, "endingtimestamp", "endingTimestamp", minimum=0),
        filter_pushdown=_bool(opts, "filterpushdown", "filterPushdown", False),
    )


def stream_options(options: Mapping[str, str]) -> StreamOptions:
    """Options of ``spark.readStream.format("liftlog")`` (start defaults to latest, as Kafka)."""
    opts = _lowered(options, STREAM_NAMES, "spark.readStream")
    common = _source_fields(opts, default_start=LATEST)
    max_offsets = _optional_int(opts, "maxoffsetspertrigger", "maxOffsetsPerTrigger", minimum=1)
    min_offsets = _optional_int(opts, "minoffsetspertrigger", "minOffsetsPerTrigger", minimum=1)
    if max_offsets is not None and min_offsets is not None and min_offsets > max_offsets:
        raise InvalidOptionError(
            f"minOffsetsPerTrigger ({min_offsets}) must not exceed maxOffsetsPerTrigger "
            f"({max_offsets})"
        )
    delay = opts.get("maxtriggerdelay", DEFAULT_MAX_TRIGGER_DELAY)
    return StreamOptions(
        **common,
        max_offsets_per_trigger=max_offsets,
        min_offsets_per_trigger=min_offsets,
        max_trigger_delay_s=parse_duration_s(delay, "maxTriggerDelay"),
    )


def any_source_options(options: Mapping[str, str]) -> SourceOptions:
    """What batch and streaming reads share, from either's options (``DataSource.schema()``
    does not know which read it plans for)."""
    opts = _lowered(options, BATCH_NAMES | STREAM_NAMES, "a read")
    return SourceOptions(**_source_fields(opts, default_start=EARLIEST))


def sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Options of ``df.write.format("liftlog")`` and ``writeStream``."""
    opts = _lowered(options, SINK_NAMES, "the liftlog sink")
    timeout_ms = _optional_int(opts, "acktimeoutms", "ackTimeoutMs", minimum=1)
    credentials = _credentials(opts)
    return SinkOptions(
        servers=_servers(opts, credentials),
        stream=_stream(opts),
        idempotent=_bool(opts, "idempotent", "idempotent", False),
        idempotency_key=opts.get("idempotencykey") or None,
        nats_url=opts.get("natsurl") or None,
        ack_timeout_s=timeout_ms / 1000 if timeout_ms is not None else DEFAULT_ACK_TIMEOUT_S,
        credentials=credentials,
        value_format=_value_format(opts),
    )


def include_headers(options: Mapping[str, str]) -> bool:
    """Just ``includeHeaders`` (``DataSource.schema()`` needs it before the full check)."""
    return _bool(
        {k.lower(): v for k, v in options.items()}, "includeheaders", "includeHeaders", False
    )


# --------------------------------------------------------------------------- helpers


def _lowered(options: Mapping[str, str], allowed: frozenset[str], where: str) -> dict[str, str]:
    """Options by lower-cased name (Spark matches names case-insensitively); unknown names
    are an error that lists the valid ones."""
    opts = {str(k).lower(): str(v) for k, v in options.items() if v is not None}
    known = {name.lower() for name in allowed | SPARK_PROVIDED}
    if "lakeuri" in known:
        known |= {k for k in opts if k.startswith(LAKE_OPTION_PREFIX)}
    unknown = sorted(set(opts) - known)
    if unknown:
        raise InvalidOptionError(
            f"unknown option(s) {unknown} for {where}.format('liftlog') "
            f"(names are case-insensitive); valid: {', '.join(sorted(allowed))}"
        )
    return opts


def _source_fields(opts: dict[str, str], default_start: int) -> _SourceFields:
    stream = _stream(opts)
    credentials = _credentials(opts)
    return {
        "servers": _servers(opts, credentials),
        "stream": stream,
        "lake_uri": opts.get("lakeuri") or None,
        "lake_options": _lake_options(opts),
        "include_headers": _bool(opts, "includeheaders", "includeHeaders", False),
        "fail_on_data_loss": _bool(opts, "failondataloss", "failOnDataLoss", True),
        "partitions": _partitions(opts.get("partitions")),
        "max_records_per_partition": _optional_int(
            opts, "maxrecordsperpartition", "maxRecordsPerPartition", minimum=1
        )
        or DEFAULT_MAX_RECORDS_PER_PARTITION,
        "min_partitions": _optional_int(opts, "minpartitions", "minPartitions", minimum=1),
        "starting": parse_offset_spec(
            opts.get("startingoffsets"), stream, "startingOffsets", default_start
        ),
        "starting_timestamp_ms": _optional_int(
            opts, "startingtimestamp", "startingTimestamp", minimum=0
        ),
        "credentials": credentials,
        "value_format": _value_format(opts),
    }


def _credentials(opts: dict[str, str]) -> ClientCredentials:
    """``token``, ``caFile``, ``certFile``, ``keyFile`` then the environment, then
    ``credentialsFile`` (or ``LIFTLOG_CREDENTIALS_FILE``); resolved on the driver, so the
    executors get the same credentials whatever their environment."""
    given = {
        "token": opts.get("token"),
        "ca_file": opts.get("cafile"),
        "cert_file": opts.get("certfile"),
        "key_file": opts.get("keyfile"),
    }
    try:
        return ClientCredentials.resolve(given, credentials_file=opts.get("credentialsfile"))
    except (ConfigError, InvalidRequestError) as exc:
        raise InvalidOptionError(f"credentials: {exc.message}") from exc


def _value_format(opts: dict[str, str]) -> str | None:
    """``valueFormat``: ``typed`` or ``binary`` (None when not given)."""
    text = opts.get("valueformat")
    if text is None or not text.strip():
        return None
    word = text.strip().lower()
    if word not in VALUE_FORMATS:
        raise InvalidOptionError(f"valueFormat must be typed or binary; got {text!r}")
    return word


def _lake_options(opts: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """The ``lake.<NAME>`` options; an unsupported NAME is an error naming it."""
    prefixed = {
        k[len(LAKE_OPTION_PREFIX) :]: v for k, v in opts.items() if k.startswith(LAKE_OPTION_PREFIX)
    }
    try:
        checked = checked_storage_options(prefixed, "lake")
    except ConfigError as exc:
        raise InvalidOptionError(f"reader option: {exc.message}") from exc
    return tuple(sorted(checked.items()))


def _servers(opts: dict[str, str], credentials: ClientCredentials) -> str:
    """``servers``, else ``LIFTLOG_SERVER`` or the credentials file's ``server`` (the
    credentials' ``server``, resolved on the driver as the rest of them)."""
    text = opts.get("servers") or credentials.server
    if not text:
        raise InvalidOptionError(
            "option 'servers' is required (or LIFTLOG_SERVER, or server in the credentials "
            "file): comma-separated REST URLs of any Liftlog nodes, e.g. http://127.0.0.1:9644"
        )
    try:
        return ",".join(parse_servers(text))
    except InvalidRequestError as exc:
        raise InvalidOptionError(f"servers: {exc.message}") from exc


def _stream(opts: dict[str, str]) -> str:
    stream = opts.get("stream") or opts.get("path")
    if not stream:
        raise InvalidOptionError("option 'stream' is required (the stream's name)")
    return stream


def _bool(opts: Mapping[str, str], key: str, name: str, default: bool) -> bool:
    text = opts.get(key)
    if text is None:
        return default
    word = text.strip().lower()
    if word not in ("true", "false"):
        raise InvalidOptionError(f"{name} must be true or false; got {text!r}")
    return word == "true"


def _optional_int(opts: dict[str, str], key: str, name: str, *, minimum: int) -> int | None:
    text = opts.get(key)
    if text is None or not text.strip():
        return None
    try:
        value = int(text.strip())
    except ValueError as exc:
        raise InvalidOptionError(f"{name} must be an integer; got {text!r}") from exc
    if value < minimum:
        raise InvalidOptionError(f"{name} must be >= {minimum}; got {value}")
    return value


def _partitions(text: str | None) -> tuple[int, ...] | None:
    """``"0,2"`` → (0, 2); the partitions a read is limited to (None: all)."""
    if text is None or not text.strip():
        return None
    try:
        values = sorted({int(item) for item in text.split(",") if item.strip()})
    except ValueError as exc:
        raise InvalidOptionError(
            f"partitions must be comma-separated partition numbers like '0,2'; got {text!r}"
        ) from exc
    if not values or values[0] < 0:
        raise InvalidOptionError(f"partitions must list partitions >= 0; got {text!r}")
    return tuple(values)
