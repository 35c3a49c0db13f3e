"""What the fuzzer feeds the server: well-formed requests of every served (API, version) drawn from the
schemas, and mutations of a seed corpus of real client frames (tests/fixtures/*.bin) and of those."""

from __future__ import annotations

from pathlib import Path

from hypothesis import strategies as st

from coordinator.server.registry import HANDLERS
from protocol.apis import API_SPECS
from protocol.client import encode_request
from tests.protocol.strategies import message_strategy

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HUGE_LENGTHS = (0x7FFFFFFF, 0x7FFFFFF0, 0xFFFFFFFF, 0x80000000, 0x00100000)


def served_versions() -> list[tuple[int, int]]:
    """Every (API key, version) the server registers a handler for: what ApiVersions advertises."""
    return [(key, v) for key, h in sorted(HANDLERS.items()) for v in range(h.min_version, h.max_version + 1)]


def seed_frames() -> list[bytes]:
    """Real client frames (size prefix removed), and one default-valued request per served version."""
    seeds = [path.read_bytes()[4:] for path in sorted(FIXTURES.glob("*.bin"))]
    for key, version in served_versions():
        seeds.append(encode_request(key, version, 7, "seed", API_SPECS[key].request_class())[4:])
    return seeds


@st.composite
def request_frames(draw: st.DrawFn) -> bytes:
    key, version = draw(st.sampled_from(served_versions()))
    message = draw(message_strategy(API_SPECS[key].request_class, version))
    correlation_id = draw(st.integers(-(2**31), 2**31 - 1))
    client_id = draw(st.none() | st.text(max_size=8))
    return encode_request(key, version, correlation_id, client_id, message)[4:]


@st.composite
def mutated_frames(draw: st.DrawFn, seeds: list[bytes]) -> bytes:
    frame = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 4))):
        if not frame:
            break
        at = draw(st.integers(0, len(frame) - 1))
        operation = draw(st.sampled_from(("flip", "truncate", "insert", "delete", "huge_length", "varint")))
        if operation == "flip":
            frame[at] ^= 1 << draw(st.integers(0, 7))
        elif operation == "truncate":
            del frame[at:]
        elif operation == "insert":
            frame[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif operation == "delete":
            del frame[at:at + draw(st.integers(1, 8))]
        elif operation == "huge_length":  # a length/count field claiming more than the frame holds
            frame[at:at + 4] = draw(st.sampled_from(HUGE_LENGTHS)).to_bytes(4, "big")
        else:  # an unsigned varint that never ends (compact lengths, tagged-field counts)
            frame[at:at + 1] = b"\xff" * draw(st.integers(1, 10))
    return bytes(frame)
