"""The scripted conversations against Apache Kafka and groupcoord: every response field must agree,
but for the differences tests/differential/allowlist.py lists with a reason."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.conftest import ServerProcess
from tests.differential.allowlist import allowed
from tests.differential.conversations import CONVERSATIONS
from tests.differential.harness import Conversation, Difference, Side, compare
from tests.kafka_oracle import KafkaOracle


def play(conversation: Conversation, name: str, host: str, port: int, token: str) -> tuple[Side, str | None]:
    """Run the script against one server; an exception ends that side's transcript (and is compared)."""
    side = Side(name, host, port, token)
    try:
        conversation(side)
        return side, None
    except Exception as e:
        last = side.transcript[-1] if side.transcript else None
        where = f" (last request: step {last.step} {last.api_name} v{last.version})" if last else ""
        return side, f"{type(e).__name__}: {e}{where}"
    finally:
        side.close()


def run_differential(name: str, conversation: Conversation, kafka: KafkaOracle, groupcoord: ServerProcess,
                     report: Path) -> list[Difference]:
    """Both sides, compared; the unexplained differences (allowlisted ones go to the report only)."""
    token = uuid.uuid4().hex[:8]
    k_side, k_error = play(conversation, "kafka", kafka.host, kafka.port, token)
    g_side, g_error = play(conversation, "groupcoord", groupcoord.host, groupcoord.port, token)
    differences, lines = compare(name, k_side, g_side)
    if k_error or g_error:
        differences.append(Difference(name, -1, "-", 0, "<script>", k_error, g_error))
    unexplained = []
    for difference in differences:
        entry = allowed(difference)
        if entry is None:
            unexplained.append(difference)
            lines.append(f"!! DIFFERENCE {difference}")
        else:
            lines.append(f"~~ allowed ({entry.reason}) {difference}")
    with report.open("a") as out:
        out.write("\n".join(lines) + "\n\n")
    return unexplained


@pytest.mark.parametrize("name", list(CONVERSATIONS))
def test_conversation_matches_kafka(name: str, kafka_oracle: KafkaOracle, groupcoord_server: ServerProcess,
                                    differential_report: Path) -> None:
    unexplained = run_differential(name, CONVERSATIONS[name], kafka_oracle, groupcoord_server, differential_report)
    assert not unexplained, (f"{len(unexplained)} differences from Kafka (report: {differential_report}):\n"
                             + "\n".join(map(str, unexplained[:40])))
