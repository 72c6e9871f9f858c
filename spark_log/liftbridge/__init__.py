"""Liftbridge's wire contract: the gRPC service ``proto.API`` (``api.proto`` and the modules
generated from it by ``make proto``) and the NATS envelope (``envelope``). The nodes serve it
(``ingest.liftbridge``); clients and tests speak it."""
