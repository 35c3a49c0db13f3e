"""protocol/generated/ is what the schemas generate: regenerating gives no diff."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from protocol import codegen
from protocol.messages import MESSAGES, HeartbeatRequest, JoinGroupResponse

ROOT = Path(__file__).resolve().parents[2]


def test_generated_modules_match_what_the_schemas_generate() -> None:
    diffs = codegen.stale_files()
    assert not diffs, "protocol/generated/ is stale; run `make codegen`:\n" + "".join(diffs.values())[:4000]


def test_every_schema_has_a_generated_class() -> None:
    schema_names = {p.stem for p in (ROOT / "schemas").glob("*.json")}
    assert set(MESSAGES) == schema_names


def test_check_reports_a_hand_edited_module(tmp_path: Path) -> None:
    for name, text in codegen.generated_sources().items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    assert codegen.stale_files(tmp_path) == {}
    edited = tmp_path / "heartbeat.py"
    edited.write_text(edited.read_text() + "\nEXTRA = 1\n")
    typed = tmp_path / "offset_commit.pxd"  # the accelerator's declarations are generated files too
    typed.write_text(typed.read_text().replace("Py_ssize_t pos", "object pos"))
    (tmp_path / "leftover.py").write_text("")
    (tmp_path / "leftover.pxd").write_text("")
    (tmp_path / "client" / "leftover.py").write_text("")
    assert set(codegen.stale_files(tmp_path)) == {"heartbeat.py", "offset_commit.pxd", "leftover.py", "leftover.pxd",
                                                  "client/leftover.py"}
    codegen.write(tmp_path)
    assert codegen.stale_files(tmp_path) == {} and not (tmp_path / "leftover.py").exists()
    assert not (tmp_path / "leftover.pxd").exists()
    assert not (tmp_path / "client" / "leftover.py").exists()


def test_typed_declarations_name_only_integer_locals() -> None:
    """The .pxd types a decoder's position, lengths and counts (never a field's value) and declares
    every decoder of its module, with the module's own parameters."""
    sources = codegen.generated_sources()  # every module of every schema: seconds each time, so once
    text = sources["heartbeat.pxd"]
    assert "cpdef tuple d_HeartbeatRequest_v4(bytes buf, Py_ssize_t pos, Py_ssize_t blen)" in text
    assert "n1=Py_ssize_t" in text and "f_" not in text
    for family in codegen.TYPED_FAMILIES:
        module = sources[f"{family}.py"]
        declared = len(re.findall(r"^cpdef ", sources[f"{family}.pxd"], re.M))
        assert declared == len(re.findall(r"^def da?_", module, re.M)) > 0, family


def test_codegen_prints_one_message_version_for_reading() -> None:
    out = subprocess.run([sys.executable, "-m", "protocol.codegen", "HeartbeatRequest", "4"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    assert "def d_HeartbeatRequest_v4(buf: bytes, pos: int, blen: int) -> tuple[HeartbeatRequest, int]:" in out
    assert "def e_HeartbeatRequest_v4(o: HeartbeatRequest, w: Append) -> None:" in out


def test_the_server_loads_only_its_direction_of_the_codec() -> None:
    """The server's modules hold request decoders and response encoders; protocol.client adds the
    other direction, which the server never imports (half the generated code to compile at start)."""
    code = ("import sys, coordinator.server.app; from protocol.messages import HeartbeatRequest, HeartbeatResponse;"
            "print(sorted(HeartbeatRequest.encoders), sorted(HeartbeatResponse.decoders),"
            " sorted(HeartbeatRequest.decoders), sorted(HeartbeatResponse.encoders),"
            " any(m.startswith('protocol.generated.client') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["[]", "[]", "[0,", "1,", "2,", "3,", "4]", "[0,", "1,", "2,", "3,", "4]", "False"]


def test_protocol_client_adds_the_client_direction() -> None:
    import protocol.client  # noqa: F401  (tests/conftest.py imports it too; this test says why it matters)

    assert sorted(HeartbeatRequest.encoders) == [0, 1, 2, 3, 4]
    assert HeartbeatRequest.decode(HeartbeatRequest("g", 1, "m").encode(4), 4) == HeartbeatRequest("g", 1, "m")


def test_generated_classes_are_real_classes_with_nested_structs() -> None:
    assert HeartbeatRequest.__module__ == "protocol.generated.heartbeat"
    member = JoinGroupResponse.JoinGroupResponseMember("m", None, b"x")
    assert member.__class__.__qualname__ == "JoinGroupResponse.JoinGroupResponseMember"
    assert HeartbeatRequest.__init__.__annotations__["group_id"] == "str"
