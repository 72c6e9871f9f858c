"""Liftbridge's gRPC client API (service ``proto.API``), served by every node.

Each RPC is a thin translation into the code paths the REST API uses (``ingest.admin``, the
replicas' produce and read paths, the cursor and group services): no behaviour lives here
twice. ``proto/`` holds the wire contract and the modules generated from it (``make proto``).
"""
