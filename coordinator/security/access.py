"""The broker's authorizer, as its settings ask for: none, or Kafka-style ACLs from the data dir."""

from __future__ import annotations

from pathlib import Path

from coordinator.config import Config
from coordinator.security.acls import acls_path
from coordinator.security.authorizer import Authorizer, parse_super_users


def make_authorizer(config: Config, data_dir: Path) -> Authorizer | None:
    if not config["authorizer.class.name"]:  # config checked the name
        return None
    return Authorizer(acls_path(data_dir), parse_super_users(config["super.users"]),
                      config["allow.everyone.if.no.acl.found"])
