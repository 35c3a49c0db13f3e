"""Kafka's CLI tools against groupcoord, compared with what the same commands print against Apache Kafka.

One scripted history runs against the session's Kafka oracle and against a groupcoord server at the same
time, with the same topic and group names: a 3-partition topic with 5 records a partition, a classic
group (a static Java consumer, range assignor) and a consumer-protocol group (a Java consumer,
group.protocol=consumer), both consuming everything and committing it. Then each command runs against
both servers (one tool JVM each, the two sides in parallel): kafka-consumer-groups --list (--state,
--type), --describe --members --verbose, --offsets, --state, --reset-offsets (refused while active,
--dry-run and --execute once the members are gone), --delete-offsets, --delete; kafka-configs
--entity-type groups --alter/--describe; kafka-topics --alter --partitions (growth, fewer, a missing
topic) and --describe after it. Outputs are compared table by table and column by column after
normalising what differs by nature: member ids (shape kept), the coordinator's port and node id (also
as a partition's leader, replicas and ISR), and Kafka's cluster-level min.insync.replicas in a topic
description.
And groupcoord's own `groupcoord groups --list` (bare, --state, --type, both) runs against Kafka beside
Kafka's tool: the two outputs must be the same text, spaces included.
Differences Kafka's side is right about are fixed in groupcoord or listed in
tests/differential/allowlist.py (CLI_ALLOWLIST, "BUG, to fix: ..."); anything else fails.
"""

from __future__ import annotations

import re
import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.differential.allowlist import allowed_cli
from tests.differential.harness import Difference

from .java_processes import JavaAdmin, JavaMember, JavaProcess, quick_java_command, wait_until

pytestmark = [pytest.mark.clients, pytest.mark.slow, pytest.mark.timeout(420)]

GROUPS_TOOL = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
CONFIGS_TOOL = "org.apache.kafka.tools.ConfigCommand"
TOPICS_TOOL = "org.apache.kafka.tools.TopicCommand"
PARTITIONS, PER_PARTITION = 3, 5
UUID36 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
ID22 = re.compile(r"(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{22}(?![A-Za-z0-9_-])")  # Kafka's Uuid.toString()
HEADER_FIRST = ("GROUP", "TOPIC")


@dataclass(eq=False)  # a dict key: by identity
class Target:
    """One server and the processes of its history."""

    side: str  # "kafka" or "groupcoord"
    bootstrap: str
    port: int
    log_dir: Path
    processes: list[JavaProcess] = field(default_factory=list)
    admin: JavaAdmin | None = None


@dataclass(frozen=True)
class Names:
    """The run's topic and groups, the same on both servers."""

    token: str
    topic: str
    classic: str
    consumer: str
    configured: str

    @classmethod
    def of(cls, token: str) -> Names:
        return cls(token, f"tools-{token}", *(f"cli-{kind}-{token}" for kind in ("classic", "consumer", "configured")))


def start_history(t: Target, n: Names) -> tuple[JavaMember, JavaMember]:
    t.admin = JavaAdmin(t.bootstrap, t.log_dir)
    t.processes.append(t.admin)
    t.admin(f"createTopic {n.topic} {PARTITIONS}")
    t.admin(f"produce {n.topic} {','.join([str(PER_PARTITION)] * PARTITIONS)}")
    old = JavaMember(t.bootstrap, n.topic, n.classic, "old-client", t.log_dir, "session.timeout.ms=30000",
                     "group.instance.id=instance-1",
                     "partition.assignment.strategy=org.apache.kafka.clients.consumer.RangeAssignor")
    new = JavaMember(t.bootstrap, n.topic, n.consumer, "new-client", t.log_dir, "group.protocol=consumer")
    t.processes += [old, new]
    return old, new


def await_consumed(t: Target, n: Names, old: JavaMember, new: JavaMember) -> None:
    admin = t.admin
    assert admin is not None
    everything = {f"{n.topic}-{p}": PER_PARTITION for p in range(PARTITIONS)}

    def consumed_everything() -> bool:
        old.check()
        new.check()
        return admin(f"listOffsets {n.classic}") == everything == admin(f"listOffsets {n.consumer}")
    wait_until(consumed_everything, 90, lambda: (t.side, old.events[-2:], new.events[-2:]), interval_s=0.3)


def members_gone(t: Target, n: Names, old: JavaMember, new: JavaMember) -> None:
    """Both groups Empty: the consumer-protocol member leaves on close; the static one sends no LeaveGroup,
    so the admin removes it (as an operator would before resetting offsets)."""
    admin = t.admin
    assert admin is not None and old.stop() == 0 and new.stop() == 0
    admin(f"removeMembers {n.classic} instance-1")
    states = lambda: {g["groupId"]: g["state"] for g in admin("listGroups")}  # noqa: E731
    wait_until(lambda: states().get(n.consumer) == "Empty" and states().get(n.classic) == "Empty", 30,
               lambda: (t.side, states()))


def run_tool(t: Target, tool: str, args: tuple[str, ...]) -> str:
    done = subprocess.run(quick_java_command(tool, "--bootstrap-server", t.bootstrap, *args), capture_output=True,
                          text=True, timeout=90)
    output = done.stdout + "".join(line + "\n" for line in done.stderr.splitlines() if "SLF4J" not in line)
    return f"exit code {done.returncode}\n{output}"


def run_groupcoord_groups(t: Target, args: tuple[str, ...]) -> str:
    """`groupcoord groups` (the kafka-consumer-groups equivalent) against ``t``, output as run_tool's."""
    done = subprocess.run([str(Path(sys.executable).with_name("groupcoord")), "groups", "--bootstrap-server",
                           t.bootstrap, *args], capture_output=True, text=True, timeout=60)
    return f"exit code {done.returncode}\n{done.stdout}{done.stderr}"


def normalise(output: str, t: Target, n: Names) -> str:
    text = output.replace(f"127.0.0.1:{t.port}", "127.0.0.1:PORT")
    text = re.sub(r"127\.0\.0\.1:PORT\s+\(\d+\)", "127.0.0.1:PORT (NODE)", text)
    text = re.sub(r"\b(Leader|Replicas|Isr): \d+\b", r"\1: NODE", text)
    # kafka-topics --describe lists the settings that are not defaults: Kafka 4.4 shows the cluster-level
    # min.insync.replicas=1 its controller keeps (ELR, KIP-966); groupcoord has no cluster-level settings.
    text = re.sub(r"(?m)(\tConfigs: )min\.insync\.replicas=1$", r"\1", text)
    text = UUID36.sub("<uuid>", text)
    names = {n.topic, n.classic, n.consumer, n.configured}
    return ID22.sub(lambda m: m.group(0) if m.group(0) in names else "<id22>", text)


def only_this_run(text: str, token: str) -> str:
    """--list on the shared oracle shows other tests' groups too: only this run's, and the header. The
    groups are sorted: Kafka lists them in its group map's hash order, which says nothing."""
    lines = text.splitlines()
    kept = [line for line in lines if line.startswith("exit code") or line.split()[:1] == ["GROUP"]]
    return "\n".join(kept + sorted(line for line in lines if token in line and line not in kept))


@dataclass
class Parsed:
    lines: list[str]  # text outside tables, whitespace collapsed, in order
    tables: list[tuple[tuple[str, ...], list[dict[str, str]]]]  # (header, rows sorted)


def parse(text: str) -> Parsed:
    lines, tables = [], []
    raw = text.splitlines()
    i = 0
    while i < len(raw):
        words = raw[i].split()
        if words and words[0] in HEADER_FIRST and all(w.upper() == w for w in words):
            header = tuple(words)
            rows = []
            i += 1
            while i < len(raw) and raw[i].strip():
                values = raw[i].split(None, len(header) - 1)
                rows.append(dict(zip(header, values + [""] * (len(header) - len(values)), strict=True)))
                i += 1
            tables.append((header, sorted(rows, key=lambda r: tuple(r.values()))))
            continue
        if words:
            lines.append(" ".join(words))
        i += 1
    return Parsed(lines, tables)


def compare(step: int, label: str, kafka: Parsed, ours: Parsed) -> list[Difference]:
    def diff(path: str, k: Any, g: Any) -> Difference:
        return Difference("cli_tools", step, label, 0, path, k, g)

    found = []
    if kafka.lines != ours.lines:
        found.append(diff("lines", kafka.lines, ours.lines))
    if len(kafka.tables) != len(ours.tables):
        return [*found, diff("tables.len", len(kafka.tables), len(ours.tables))]
    for (k_header, k_rows), (g_header, g_rows) in zip(kafka.tables, ours.tables, strict=True):
        if k_header != g_header:
            found.append(diff("header", k_header, g_header))
            continue
        if len(k_rows) != len(g_rows):
            found.append(diff("rows.len", k_rows, g_rows))
            continue
        for k_row, g_row in zip(k_rows, g_rows, strict=True):
            found += [diff(column, k_row[column], g_row[column]) for column in k_header
                      if k_row[column] != g_row[column]]
    return found


def commands(n: Names, phase: str) -> list[tuple[str, str, tuple[str, ...]]]:
    g = GROUPS_TOOL
    if phase == "active":
        return [
            ("list", g, ("--list",)),
            ("list --state", g, ("--list", "--state")),
            ("list --type", g, ("--list", "--type")),
            *((f"describe --members --verbose {kind}", g, ("--describe", "--group", group, "--members", "--verbose"))
              for kind, group in (("classic", n.classic), ("consumer", n.consumer))),
            *((f"describe --offsets {kind}", g, ("--describe", "--group", group, "--offsets"))
              for kind, group in (("classic", n.classic), ("consumer", n.consumer))),
            *((f"describe --state {kind}", g, ("--describe", "--group", group, "--state"))
              for kind, group in (("classic", n.classic), ("consumer", n.consumer))),
            ("reset-offsets active --execute", g, ("--reset-offsets", "--group", n.classic, "--topic", n.topic,
                                                   "--to-earliest", "--execute")),
            ("reset-offsets active --dry-run", g, ("--reset-offsets", "--group", n.consumer, "--topic", n.topic,
                                                   "--to-earliest", "--dry-run")),
        ]
    if phase == "empty":
        configs = ("--entity-type", "groups", "--entity-name", n.configured)
        return [
            ("reset-offsets --to-earliest --execute", g, ("--reset-offsets", "--group", n.classic, "--topic", n.topic,
                                                          "--to-earliest", "--execute")),
            ("reset-offsets --to-offset --execute", g, ("--reset-offsets", "--group", n.consumer, "--topic",
                                                        f"{n.topic}:1", "--to-offset", "2", "--execute")),
            ("reset-offsets --shift-by --dry-run", g, ("--reset-offsets", "--group", n.consumer, "--topic", n.topic,
                                                       "--shift-by", "-1", "--dry-run")),
            ("describe --offsets empty consumer", g, ("--describe", "--group", n.consumer, "--offsets")),
            ("describe --members empty classic", g, ("--describe", "--group", n.classic, "--members")),
            ("describe --state empty consumer", g, ("--describe", "--group", n.consumer, "--state")),
            ("delete-offsets partition", g, ("--delete-offsets", "--group", n.consumer, "--topic", f"{n.topic}:0")),
            ("delete-offsets topic", g, ("--delete-offsets", "--group", n.classic, "--topic", n.topic)),
            ("describe --offsets after delete-offsets", g, ("--describe", "--group", n.consumer, "--offsets")),
            ("delete classic", g, ("--delete", "--group", n.classic)),
            ("delete consumer", g, ("--delete", "--group", n.consumer)),
            ("delete missing", g, ("--delete", "--group", f"cli-missing-{n.token}")),
            ("describe missing", g, ("--describe", "--group", f"cli-missing-{n.token}")),
            ("configs --add-config", CONFIGS_TOOL, (*configs, "--alter", "--add-config",
                                                    "consumer.session.timeout.ms=50000,"
                                                    "consumer.heartbeat.interval.ms=6000")),
            ("configs --describe", CONFIGS_TOOL, (*configs, "--describe")),
            ("configs --delete-config", CONFIGS_TOOL, (*configs, "--alter", "--delete-config",
                                                       "consumer.session.timeout.ms")),
            ("configs --describe after delete", CONFIGS_TOOL, (*configs, "--describe")),
            ("configs bad value", CONFIGS_TOOL, (*configs, "--alter", "--add-config", "consumer.session.timeout.ms=1")),
            ("topics --alter --partitions", TOPICS_TOOL, ("--alter", "--topic", n.topic, "--partitions", "5")),
            ("topics --alter fewer", TOPICS_TOOL, ("--alter", "--topic", n.topic, "--partitions", "4")),
            ("topics --alter missing", TOPICS_TOOL, ("--alter", "--topic", f"tools-missing-{n.token}",
                                                     "--partitions", "4")),
            ("topics --describe after alter", TOPICS_TOOL, ("--describe", "--topic", n.topic)),
        ]
    raise ValueError(phase)


def test_kafka_tools_print_the_same_against_groupcoord_and_kafka(kafka_oracle, server_factory,
                                                                  tmp_path: Path) -> None:
    server = server_factory("group.initial.rebalance.delay.ms=0", "group.consumer.assignment.interval.ms=0")
    n = Names.of(uuid.uuid4().hex[:8])
    kafka = Target("kafka", kafka_oracle.bootstrap, kafka_oracle.port, tmp_path / "kafka")
    ours = Target("groupcoord", server.bootstrap, server.port, tmp_path / "groupcoord")
    targets = (kafka, ours)
    for t in targets:
        t.log_dir.mkdir()
    differences: list[Difference] = []
    compared: list[str] = []
    kafka_said: dict[str, Parsed] = {}
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            members = dict(zip(targets, pool.map(lambda t: start_history(t, n), targets), strict=True))
            list(pool.map(lambda t: await_consumed(t, n, *members[t]), targets))

            def run_phase(phase: str) -> None:
                for label, tool, args in commands(n, phase):
                    k_out, g_out = pool.map(lambda t, tool=tool, args=args: normalise(run_tool(t, tool, args), t, n),
                                            targets)
                    if label.startswith("list"):
                        k_out, g_out = only_this_run(k_out, n.token), only_this_run(g_out, n.token)
                    step = len(compared)
                    compared.append(f"{step} {label}: kafka\n{k_out}\n--- groupcoord\n{g_out}")
                    kafka_said[label] = parse(k_out)
                    differences.extend(compare(step, label, kafka_said[label], parse(g_out)))

            run_phase("active")
            # groupcoord's own CLI against Kafka prints what Kafka's tool printed there, to the byte.
            for label, args in (("list", ("--list",)), ("list --state", ("--list", "--state")),
                                ("list --type", ("--list", "--type")),
                                ("list --type consumer --state", ("--list", "--type", "consumer", "--state"))):
                kafka_tool, our_tool = pool.map(lambda run, args=args: only_this_run(run(kafka, args), n.token),
                                                (lambda t, a: run_tool(t, GROUPS_TOOL, a), run_groupcoord_groups))
                compared.append(f"{len(compared)} groupcoord groups {label} against kafka: kafka's tool\n"
                                f"{kafka_tool}\n--- groupcoord groups\n{our_tool}")
                if our_tool != kafka_tool:
                    differences.append(Difference("cli", len(compared) - 1, f"groupcoord groups {label}", 0, "text",
                                                  kafka_tool, our_tool))
            list(pool.map(lambda t: members_gone(t, n, *members[t]), targets))
            run_phase("empty")
    finally:
        for t in targets:
            for process in reversed(t.processes):
                process.stop()
    (tmp_path / "compared.txt").write_text("\n\n".join(compared))
    # The history is what the script says (so equal outputs are not two equal failures).
    assert kafka_said["list"].lines == ["exit code 0", *sorted([n.classic, n.consumer])], kafka_said["list"]
    for kind in ("classic", "consumer"):
        [(_, rows)] = kafka_said[f"describe --offsets {kind}"].tables
        assert [(r["PARTITION"], r["CURRENT-OFFSET"], r["LAG"]) for r in rows] == \
            [(str(p), str(PER_PARTITION), "0") for p in range(PARTITIONS)], rows
    assert "consumer.heartbeat.interval.ms=6000" in " ".join(kafka_said["configs --describe"].lines)
    unexplained = [d for d in differences if allowed_cli(d) is None]
    assert not unexplained, "\n".join(map(str, unexplained)) + f"\n(all outputs: {tmp_path / 'compared.txt'})"
