"""The partition log: Liftlog's storage core (segments, indexes, epochs, checkpoints, recovery).

Kafka's model and words: a partition's log is a sequence of segments of CRC-framed record
batches addressed by dense offsets; LEO is the next offset to be written, the HW the first one
not yet committed, the log start offset the first one still stored.
"""

from spark_log.log.batch import (
    HEADER_SIZE,
    RECORD_SCHEMA,
    BatchHeader,
    build_record_batch,
    decode_header,
    decode_records,
    encode_batch,
    iter_batches,
    verify_batch,
)
from spark_log.log.errors import (
    CheckpointError,
    LeaderEpochRegressionError,
    LogClosedError,
    NonContiguousBatchError,
)
from spark_log.log.partition_log import PartitionLog
from spark_log.log.records import Record, records_from_batches
from spark_log.log.recovery import RecoveryLoss

__all__ = [
    "HEADER_SIZE",
    "RECORD_SCHEMA",
    "BatchHeader",
    "CheckpointError",
    "LeaderEpochRegressionError",
    "LogClosedError",
    "NonContiguousBatchError",
    "PartitionLog",
    "Record",
    "RecoveryLoss",
    "build_record_batch",
    "decode_header",
    "decode_records",
    "encode_batch",
    "iter_batches",
    "records_from_batches",
    "verify_batch",
]
