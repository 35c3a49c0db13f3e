"""docker-compose.yml and the Dockerfile are checked without a Docker engine (none runs here or in CI):
schema-valid per the compose spec, and everything they refer to exists in the repo."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
COMPOSE_FILE = REPO_ROOT / "docker-compose.yml"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE_FILE.read_text())


def services(compose: dict) -> dict:
    return compose.get("services") or {}


def volume_mounts(service: dict) -> list[tuple[str | None, str, str]]:
    """(source, target, type) for each entry, short (`src:dst[:mode]`) or long syntax."""
    mounts = []
    for entry in service.get("volumes") or []:
        if isinstance(entry, str):
            parts = entry.split(":")
            if len(parts) == 1:
                mounts.append((None, parts[0], "volume"))  # anonymous volume
            else:
                source, target = parts[0], parts[1]
                kind = "bind" if source.startswith((".", "/", "~")) else "volume"
                mounts.append((source, target, kind))
        else:
            mounts.append((entry.get("source"), entry["target"], entry.get("type", "volume")))
    return mounts


_VARIABLE = re.compile(r"\$\{(\w+)(?::?-([^}]*))?\}")


def interpolate(value: str) -> str:
    """Compose's `${NAME:-default}` with nothing set in the environment: the default (as `docker compose` does)."""
    return _VARIABLE.sub(lambda m: m.group(2) or "", value)


def env_files(service: dict) -> list[Path]:
    files = service.get("env_file") or []
    files = [files] if isinstance(files, (str, dict)) else files
    return [REPO_ROOT / (f["path"] if isinstance(f, dict) else f) for f in files]


def read_env_file(path: Path) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if line.strip() and not line.startswith("#"))
    return {k.strip(): v.strip() for k, v in pairs}


def environment(service: dict) -> dict[str, str]:
    """The service's environment as the container sees it: env_file entries, then `environment`."""
    merged: dict[str, str] = {}
    for path in env_files(service):
        merged.update(read_env_file(path))
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    merged.update({k: "" if v is None else interpolate(str(v)) for k, v in env.items()})
    return merged


def test_compose_file_validates_against_the_compose_spec_schema():
    result = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec", str(COMPOSE_FILE)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, f"check-jsonschema:\n{result.stdout}\n{result.stderr}"


def test_every_build_context_and_dockerfile_exists(compose):
    for name, service in services(compose).items():
        build = service.get("build")
        if build is None:
            continue
        if isinstance(build, str):
            build = {"context": build}
        context = (REPO_ROOT / build.get("context", ".")).resolve()
        assert context.is_dir(), f"service {name}: build context {context} is not a directory"
        dockerfile = context / build.get("dockerfile", "Dockerfile")
        assert dockerfile.is_file(), f"service {name}: {dockerfile} does not exist"


def test_every_named_volume_is_declared_and_every_bind_mount_source_exists(compose):
    declared = set((compose.get("volumes") or {}).keys())
    for name, service in services(compose).items():
        for source, _target, kind in volume_mounts(service):
            if kind == "volume" and source is not None:
                assert source in declared, f"service {name}: volume {source!r} is not declared under top-level volumes"
            elif kind == "bind":
                path = (REPO_ROOT / Path(source).expanduser()).resolve()
                assert path.exists(), f"service {name}: bind mount source {source} does not exist"


def test_every_depends_on_target_is_a_service_in_the_file(compose):
    names = set(services(compose))
    for name, service in services(compose).items():
        depends_on = service.get("depends_on") or []
        targets = list(depends_on) if isinstance(depends_on, (list, dict)) else [depends_on]
        for target in targets:
            assert target in names, f"service {name} depends on unknown service {target!r}"


def test_coordinator_publishes_9092_keeps_its_data_dir_on_a_volume_and_has_a_healthcheck(compose):
    coordinator = services(compose)["coordinator"]
    published = []
    for port in coordinator.get("ports") or []:
        if isinstance(port, dict):
            published.append((str(port.get("published")), str(port["target"])))
        else:
            *_, host_port, container_port = str(port).split(":")
            published.append((host_port, container_port.split("/")[0]))
    assert ("9092", "9092") in published

    env = environment(coordinator)
    assert re.fullmatch(r"PLAINTEXT://0\.0\.0\.0:9092", env.get("GROUPCOORD_LISTENERS", "")), env
    data_dir = env.get("GROUPCOORD_LOG_DIRS")
    assert data_dir, "GROUPCOORD_LOG_DIRS must name the data dir so it can be a volume"
    assert data_dir in [target for _, target, _ in volume_mounts(coordinator)], "data dir is not a volume"

    healthcheck = coordinator.get("healthcheck") or {}
    assert healthcheck.get("test") and not healthcheck.get("disable"), "coordinator has no healthcheck"


def test_the_server_accepts_the_coordinator_services_environment_and_advertises_its_published_port(compose):
    from coordinator.config import load_config

    coordinator = services(compose)["coordinator"]
    config = load_config(environ=environment(coordinator))  # raises ConfigError on unknown names or bad values
    published = {str(p).split(":")[-2] for p in coordinator.get("ports") or [] if isinstance(p, str)}
    advertised = config["advertised.listeners"] or config["listeners"]
    assert advertised and {str(listener.port) for listener in advertised} <= published, (
        f"clients are sent to {advertised} but the service publishes {published}"
    )


def test_every_path_the_dockerfile_copies_exists():
    sources = []
    for line in (REPO_ROOT / "Dockerfile").read_text().splitlines():
        words = line.split()
        if words and words[0].upper() in ("COPY", "ADD") and not any(w.startswith("--from") for w in words):
            sources += [w for w in words[1:-1] if not w.startswith("--")]
    assert sources, "Dockerfile copies nothing"
    for source in sources:
        assert (REPO_ROOT / source).exists(), f"Dockerfile copies {source}, which does not exist"


def test_every_env_file_exists(compose):
    for name, service in services(compose).items():
        for path in env_files(service):
            assert path.is_file(), f"service {name}: env_file {path} does not exist"


def test_the_services_make_integration_runs_natively_are_the_ones_in_the_file(compose):
    """`make integration` (integration/run.py) is this topology: same services, scripts and settings."""
    assert set(services(compose)) == {"coordinator", "producer", "consumers", "report"}
    run_py = (REPO_ROOT / "integration" / "run.py").read_text()
    for name in ("producer", "consumers"):
        command = " ".join(services(compose)[name]["command"])
        script = re.search(r"integration/(\w+\.py)", command).group(1)
        assert (REPO_ROOT / "integration" / script).is_file()
        assert f'"{script}"' in run_py, f"integration/run.py does not run {script}"
        assert [p.name for p in env_files(services(compose)[name])] == ["workload.env"]
        for variable in re.findall(r"\$\$(\w+)", command):
            assert variable in read_env_file(REPO_ROOT / "integration" / "workload.env")
    assert [p.name for p in env_files(services(compose)["coordinator"])] == ["coordinator.env"]
    assert '"coordinator.env"' in run_py and '"workload.env"' in run_py
    assert services(compose)["report"]["command"][:2] == ["groupcoord", "report"] and '"report"' in run_py


def test_every_build_target_is_a_stage_of_the_dockerfile(compose):
    dockerfile = (REPO_ROOT / "Dockerfile").read_text()
    stages = set(re.findall(r"^FROM\s+\S+\s+AS\s+(\S+)", dockerfile, re.MULTILINE | re.IGNORECASE))
    for name, service in services(compose).items():
        target = (service.get("build") or {}).get("target")
        if target:
            assert target in stages, f"service {name}: build target {target!r} is not a Dockerfile stage {stages}"
