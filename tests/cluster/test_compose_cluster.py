"""docker-compose.cluster.yml, checked without a Docker engine as tests/test_compose.py checks the
single-node file: schema-valid, everything it refers to exists, and every node's environment is one
the server accepts, naming a distinct node, the compose file's PostgreSQL and a published port."""

from __future__ import annotations

import re
import subprocess
import sys
from urllib.parse import urlparse

import pytest
import yaml

from coordinator.cluster.commands import URL_ENV
from tests.test_compose import REPO_ROOT, environment, services, volume_mounts

COMPOSE_FILE = REPO_ROOT / "docker-compose.cluster.yml"
NODES = ("node1", "node2", "node3")


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE_FILE.read_text())


def test_the_cluster_compose_file_validates_against_the_compose_spec_schema() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec", str(COMPOSE_FILE)],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"check-jsonschema:\n{result.stdout}\n{result.stderr}"


def test_builds_volumes_and_dependencies_exist(compose) -> None:
    dockerfile = (REPO_ROOT / "Dockerfile").read_text()
    declared = set(compose.get("volumes") or {})
    names = set(services(compose))
    for name, service in services(compose).items():
        build = service.get("build")
        if build is not None:
            assert (REPO_ROOT / build["context"] / build["dockerfile"]).is_file()
            assert re.search(rf"^FROM \S+ AS {build['target']}$", dockerfile, re.MULTILINE), build["target"]
        for source, _, kind in volume_mounts(service):
            assert kind != "volume" or source is None or source in declared, (name, source)
        assert set(service.get("depends_on") or {}) <= names, name
    for node in NODES:
        assert services(compose)[node]["depends_on"]["db-init"]["condition"] == "service_completed_successfully"
    assert services(compose)["db-init"]["depends_on"]["postgres"]["condition"] == "service_healthy"


def test_every_node_is_a_distinct_cluster_member_of_the_compose_files_postgres(compose) -> None:
    from coordinator.config import load_config

    postgres = environment(services(compose)["postgres"])
    node_ids = set()
    for name in NODES:
        service = services(compose)[name]
        env = environment(service)
        config = load_config(environ={k: v for k, v in env.items() if k.startswith("GROUPCOORD_")})
        node_ids.add(config["node.id"])
        url = urlparse(config["coordinator.store.url"])
        assert (url.scheme, url.hostname, url.username, url.path.lstrip("/")) == (
            "postgresql", "postgres", postgres["POSTGRES_USER"], postgres["POSTGRES_DB"])
        assert env["PGPASSWORD"] == postgres["POSTGRES_PASSWORD"]
        published = {str(p).split(":")[-2] for p in service["ports"]}
        advertised = config["advertised.listeners"]
        assert {str(listener.port) for listener in advertised} <= published
        assert [listener.host for listener in advertised] == [name]  # what the compose network resolves
        assert config["log.dirs"].as_posix() in [target for _, target, _ in volume_mounts(service)]
        assert "readyz" in " ".join(service["healthcheck"]["test"])
    assert len(node_ids) == len(NODES)
    init = environment(services(compose)["db-init"])
    assert init[URL_ENV] == environment(services(compose)["node1"])[URL_ENV]
    assert services(compose)["db-init"]["command"] == ["db", "init"]
