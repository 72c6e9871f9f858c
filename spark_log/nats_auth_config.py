"""The ``[nats_auth]`` table of a node config: the node answers nats-server's auth callout.

With it, a NATS client logs in with a Liftlog bearer token (as the NATS token, or as the
password of ``user=<principal>``) and the NATS server asks the nodes who that is and what it
may publish and subscribe to; the nodes answer from the same tokens and ACLs as the REST API
(docs/security.md#nats-logins-by-token). ``issuer_seed_file`` holds the account NKey seed the
server trusts as the callout's ``issuer``; without it the node answers no callout.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from spark_log.errors import ConfigError
from spark_log.secret_file import read_secret_file

DEFAULT_CALLOUT_ACCOUNT = "$G"


@dataclass(frozen=True)
class NatsAuthConfig:
    """``issuer_seed_file``: the callout issuer's account seed (``SA...``), empty for off.
    ``account``: the NATS account the authorized clients are placed in, the one the nodes
    are in (``$G`` when the server defines no accounts). ``system_user`` and
    ``system_password``: a user of the server's system account, through which the nodes
    disconnect clients whose rights changed, so they log in again under the new rights;
    without it a change applies to new connections only."""

    issuer_seed_file: str = ""
    account: str = DEFAULT_CALLOUT_ACCOUNT
    system_user: str = ""
    system_password: str = field(default="", repr=False)

    def __post_init__(self) -> None:
        if bool(self.system_user) != bool(self.system_password):
            raise ConfigError("nats_auth.system_user and system_password must be set together")
        if not self.account:
            raise ConfigError("nats_auth.account must name a NATS account")
        if self.issuer_seed_file and not Path(self.issuer_seed_file).is_file():
            raise ConfigError(f"nats_auth.issuer_seed_file {self.issuer_seed_file}: no such file")

    @property
    def enabled(self) -> bool:
        return bool(self.issuer_seed_file)

    def issuer_seed(self) -> str:
        """The seed, read at start (a changed file needs a restart)."""
        seed = read_secret_file(self.issuer_seed_file, "nats_auth.issuer_seed_file")
        if not seed.startswith("SA"):
            raise ConfigError(
                f"nats_auth.issuer_seed_file {self.issuer_seed_file}: not an account seed (SA...)"
            )
        return seed
