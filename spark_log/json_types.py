"""The types of JSON documents: the one place where ``Any`` stands for a decoded value.

``json.loads`` (and ``tomllib.loads``, and a ZooKeeper znode read) gives no types, so a
document's fields are known only once the code that reads each one has checked it. These
aliases say "JSON" where a bare ``dict[str, Any]`` would say nothing; a shape that is fixed
gets its own dataclass or TypedDict instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

JsonValue: TypeAlias = Any  # json.loads gives no types: object, list, str, number, bool or None
JsonObject: TypeAlias = dict[str, Any]  # json.loads gives no types to an object's values
JsonMapping: TypeAlias = Mapping[str, Any]  # a JSON object that a function only reads
