"""The differential fuzzer (tests/differential/fuzz.py) over a fixed set of seeds: generated
classic-group sequences must get the same answers from Kafka and groupcoord, allowlist aside; a
failure names the seed, the first divergence and the action that caused it.

More seeds: GC_TEST_FUZZ_SEEDS=100-199 (a range) or a comma list; the default set keeps the run
to about a minute (a parked JoinGroup costs its 1 s rebalance timeout on each side).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import ServerProcess
from tests.differential.fuzz import conversation
from tests.differential.test_differential import run_differential
from tests.kafka_oracle import KafkaOracle


def _seeds() -> list[int]:
    text = os.environ.get("GC_TEST_FUZZ_SEEDS", "1-8")
    if "-" in text:
        low, high = map(int, text.split("-"))
        return list(range(low, high + 1))
    return [int(part) for part in text.split(",")]


@pytest.mark.parametrize("seed", _seeds())
def test_generated_sequence_matches_kafka(seed: int, kafka_oracle: KafkaOracle, groupcoord_server: ServerProcess,
                                          differential_report: Path) -> None:
    play = conversation(seed)
    unexplained = run_differential(play.__name__, play, kafka_oracle, groupcoord_server, differential_report)
    if unexplained:
        first = min(unexplained, key=lambda d: d.step)
        actions = play.actions  # type: ignore[attr-defined]
        # Step 0 is CreateTopics; step n >= 1 is action n - 1.
        cause = actions[first.step - 1] if 1 <= first.step <= len(actions) else None
        pytest.fail(f"seed {seed}: first divergence {first}\ncaused by {cause}\nscript:\n"
                    + "\n".join(f"  {i + 1}: {a}" for i, a in enumerate(actions))
                    + f"\n(report: {differential_report})")
