"""Print the FileDescriptorProto a client ships for Liftbridge's ``api.proto``.

Usage: ``dump_descriptor.py MODULE`` (the client's generated ``api_pb2``), run inside that
client's venv. It prints one JSON line ``{"result": {"module": ..., "descriptor": BASE64}}``:
the serialized descriptor, which the contract test compares with our own field by field.
"""

from __future__ import annotations

import base64
import importlib
import json
import sys

from google.protobuf import descriptor_pb2


def dump(module_name: str) -> dict[str, str]:
    module = importlib.import_module(module_name)
    proto = descriptor_pb2.FileDescriptorProto()
    module.DESCRIPTOR.CopyToProto(proto)
    return {
        "module": module_name,
        "descriptor": base64.b64encode(proto.SerializeToString()).decode(),
    }


if __name__ == "__main__":
    print(json.dumps({"result": dump(sys.argv[1])}))
