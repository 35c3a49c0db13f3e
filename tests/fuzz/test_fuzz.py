"""A CI-sized fuzz pass over every served API (`make fuzz` runs the long one: tests/fuzz/run.py).

Well-formed random requests of every served (API, version), then mutations of real client frames,
go through the real server's dispatch with its real state; see harness.py for what a finding is.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings

from coordinator.server.app import load_api_modules
from tests.fuzz.harness import FuzzTarget
from tests.fuzz.inputs import mutated_frames, request_frames, seed_frames, served_versions

load_api_modules()  # HANDLERS must be filled before the strategies read it
EXAMPLES = int(os.environ.get("GC_FUZZ_EXAMPLES", "1500"))
FUZZ_SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                         suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory):
    fuzz_target = FuzzTarget(tmp_path_factory.mktemp("fuzz-data"))
    yield fuzz_target
    fuzz_target.close()


def test_every_served_api_and_version_is_fuzzed():
    assert len(served_versions()) > 100, "the served table looks empty: were the API modules loaded?"


def test_well_formed_random_requests_of_every_served_api_never_break_the_server(target):
    @FUZZ_SETTINGS
    @given(request_frames())
    def feed(frame: bytes) -> None:
        target.feed(frame)

    feed()
    assert not target.findings, "\n".join(map(str, target.findings[:10]))


def test_mutated_real_client_frames_never_break_the_server(target):
    seeds = seed_frames()

    @FUZZ_SETTINGS
    @given(mutated_frames(seeds))
    def feed(frame: bytes) -> None:
        target.feed(frame)

    feed()
    assert not target.findings, "\n".join(map(str, target.findings[:10]))
