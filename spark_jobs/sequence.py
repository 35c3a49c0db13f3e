"""Each group's GroupMetadata writes in log order, in one pass over a partition: what the
`consumer_offsets` source yields with option `groups=history` (issue 5).

A group lives in one `__consumer_offsets` partition (Kafka places it by a hash of its id), and the
segments of a partition hold its records in offset order. So one task that reads a partition's
segments in order sees every group's history in order, and can say for each write what came before
it with a few sets, where Spark needed a window over every record with its whole member list
(a shuffle, a sort, and member lists compared element by element by interpreted lambdas).

`GroupHistory` takes the record batches of one partition in offset order (`decode.decode_segment`
or `summarize.summarize_segment`, segment after segment). Rows other than GroupMetadata pass
through at once, with the history columns null. A GroupMetadata row comes out once its history is
complete (at the group's next new generation or deletion, or at the end of the partition), without
its full member list and with these columns (`HISTORY_FIELDS`):

- `write`: `created` (generation 0), `generation` (a completed rebalance), `static_replacement`
  (same generation again: a static member replaced without a rebalance, KIP-345), `deleted`
  (a tombstone).
- `member_count`, `static_members` (members with a group instance id).
- For `generation` writes, the rebalance it completed: `reasons` (the KIP-800 reasons written since
  the previous new generation, sorted; a reason written right after a static replacement belongs to
  that replacement and is left out; cause records without a text are not reasons), `end_ms` (when
  the group's next generation or deletion was written), `trigger`, and member ids: `joined`,
  `left`, `removed` (by an admin), `expired`, and `static_rejoined` (instance ids of static members
  that came back as a new member id).
- `events`: for `generation` and `static_replacement` writes, each member that joined or left
  (`membership_events` of the report).
- `current_members`: on the group's latest write only, its members.

Who left how: a member missing from the new generation is `static_rejoined` if its instance id came
back under a new member id; otherwise its removal's cause record (type 30000 value version 1, which
the server writes for every removal since issue 20) says: `left` (LeaveGroup, heartbeat -1 or -2),
`removed` (an admin's LeaveGroup) or `expired` (session or rebalance timeout). A log written before
cause records has only KIP-800 texts: `left` if a LeaveGroup reason names the member's id or
instance id, `expired` otherwise. (The earlier Spark formulation looked instance ids up with
`array_contains`, which answers null when the array holds a null: a static member gone in a
generation that a dynamic member joined was then neither expired nor rejoined. Plain sets here.)
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

GROUP_METADATA, GROUP_REASON = "group_metadata", "group_reason"

#: The member fields the report shows; the others are not kept.
MEMBER = pa.struct([("member_id", pa.string()), ("group_instance_id", pa.string()), ("client_id", pa.string()),
                    ("client_host", pa.string())])
REASON = pa.struct([("reason_ms", pa.int64()), ("api", pa.string()), ("member_id", pa.string()),
                    ("group_instance_id", pa.string()), ("reason", pa.string())])
#: Causes (coordinator.records.RemovalCause values) the report counts as a member's own leaving,
#: and as an admin's removal; every other cause (timeouts, replacement) is an expiry.
LEFT_CAUSES = frozenset({"left", "static_left", "static_leave_expired"})
REMOVED_CAUSES = frozenset({"removed"})
EVENT = pa.struct([("event", pa.string()), ("member_id", pa.string()), ("group_instance_id", pa.string()),
                   ("client_id", pa.string()), ("client_host", pa.string())])
HISTORY_FIELDS: tuple[tuple[str, pa.DataType], ...] = (
    ("write", pa.string()), ("member_count", pa.int32()), ("static_members", pa.int32()),
    ("trigger", pa.string()), ("reasons", pa.list_(REASON)), ("end_ms", pa.int64()),
    ("joined", pa.list_(pa.string())), ("left", pa.list_(pa.string())), ("expired", pa.list_(pa.string())),
    ("static_rejoined", pa.list_(pa.string())), ("events", pa.list_(EVENT)), ("current_members", pa.list_(MEMBER)),
    ("removed", pa.list_(pa.string())),
)
HISTORY_COLUMNS = tuple(name for name, _ in HISTORY_FIELDS)

Member = tuple[str, str | None, str | None, str | None]  # member_id, group_instance_id, client_id, client_host
Reason = tuple[int | None, str | None, str | None, str | None, str | None]  # as REASON
Cause = tuple[str | None, str | None, str]  # member_id, group_instance_id, cause


@functools.cache
def history_schema(base: pa.Schema) -> pa.Schema:
    """``base`` (a reader schema) without the full member lists, with the history columns."""
    schema = base.remove(base.get_field_index("members"))
    for name, typ in HISTORY_FIELDS:
        schema = schema.append(pa.field(name, typ))
    return schema


# ---- one write ----------------------------------------------------------------------------------

@dataclass(slots=True)
class Write:
    """One GroupMetadata record of a group and its history columns (`HISTORY_FIELDS`)."""

    row: int  # where its other columns are in `GroupHistory`'s kept rows
    offset: int
    tombstone: bool
    generation: int | None
    members: list[Member]
    write: str
    static_members: int
    trigger: str | None = None
    reasons: list[Reason] | None = None
    end_ms: int | None = None
    joined: list[str] | None = None
    left: list[str] | None = None
    expired: list[str] | None = None
    static_rejoined: list[str] | None = None
    events: list[tuple] | None = None
    current_members: list[Member] | None = None
    removed: list[str] | None = None


def write_kind(tombstone: bool, generation: int | None, prev: Write | None) -> str:
    fresh = prev is None or prev.tombstone
    if tombstone:
        return "deleted"
    if generation == 0:
        return "created"
    if not fresh and generation == prev.generation:  # type: ignore[union-attr]
        return "static_replacement"
    return "generation"


def reason_order(reason: Reason) -> tuple:
    """Spark's `array_sort` of the reason structs: field by field, a null before any value."""
    return tuple((value is not None, value) for value in reason)


def complete_rebalance(w: Write, prev: Write | None, prev_members: list[Member], joined: list[Member],
                       left: list[Member], reasons: list[Reason], causes: list[Cause] | None = None) -> None:
    """The rebalance a `generation` write completed: its trigger, who joined, left, was removed,
    expired or came back."""
    w.reasons = sorted(reasons, key=reason_order)
    cause_of = {c[0]: c[2] for c in causes or ()}  # the last cause recorded for each member id
    leaves = [r for r in w.reasons if r[1] == "LeaveGroup"]
    leave_ids = {r[2] for r in leaves}
    leave_instances = {r[3] for r in leaves if r[3] is not None}
    joined_instances = {m[1] for m in joined if m[1] is not None}
    # A dynamic member's instance id is None, which none of the instance sets holds.
    rejoined = [m for m in left if m[1] in joined_instances]
    with_reason: list[Member] = []
    removed: list[Member] = []
    expired: list[Member] = []
    for m in left:
        cause = cause_of.get(m[0])
        if cause in LEFT_CAUSES or (cause is None and (m[0] in leave_ids or m[1] in leave_instances)):
            with_reason.append(m)
        elif m[1] in joined_instances:
            continue  # came back under a new member id: static_rejoined
        elif cause in REMOVED_CAUSES:
            removed.append(m)
        else:
            expired.append(m)
    w.joined, w.left, w.removed = [m[0] for m in joined], [m[0] for m in with_reason], [m[0] for m in removed]
    w.expired, w.static_rejoined = [m[0] for m in expired], [m[1] for m in rejoined]  # type: ignore[misc]
    if prev is None or prev.tombstone or (prev.generation == 0 and not prev_members):
        w.trigger = "initial"
    elif not w.members:
        w.trigger = "group_emptied"
    elif with_reason:
        w.trigger = "member_left"
    elif removed:
        w.trigger = "member_removed"
    elif rejoined:
        w.trigger = "static_member_rejoined"
    elif expired:
        w.trigger = "member_expired"
    elif joined:
        w.trigger = "member_joined"
    else:
        w.trigger = "rejoin"


def membership_events(w: Write, joined: list[Member], left: list[Member]) -> list[tuple]:
    """(event, member fields...) for each member that joined or left at a `generation` or
    `static_replacement` write. A member that came in as a static replacement is not an event."""
    if w.write == "static_replacement":
        return [("static_replaced", *m) for m in left]
    rejoined, with_reason, removed = set(w.static_rejoined or ()), set(w.left or ()), set(w.removed or ())
    events = [("static_rejoined_as" if (m[1] if m[1] is not None else "") in rejoined else "joined", *m)
              for m in joined]
    for m in left:
        if (m[1] if m[1] is not None else "") in rejoined:
            events.append(("static_rejoined", *m))
        else:
            events.append(("left" if m[0] in with_reason else "removed" if m[0] in removed else "expired", *m))
    return events


# ---- one partition ------------------------------------------------------------------------------

@dataclass(slots=True)
class _Group:
    last: Write | None = None
    open: list[Write] = field(default_factory=list)  # written, history not yet complete
    reasons: list[Reason] = field(default_factory=list)  # since the last new generation
    causes: list[Cause] = field(default_factory=list)  # removals since the last new generation


class GroupHistory:
    """The history columns of one partition's GroupMetadata records; see the module docstring.

    Feed it the partition's batches in offset order (`add`), then take the rest (`finish`)."""

    def __init__(self, chunk_rows: int = 131072) -> None:
        self.chunk_rows = chunk_rows
        self.groups: dict[str, _Group] = {}
        self.kept: list[pa.Table] = []  # GroupMetadata rows so far, without members and history
        self.kept_rows = 0
        self.done: list[Write] = []

    def add(self, batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
        """``batch``'s other rows at once (history columns null), then any GroupMetadata rows completed."""
        schema = history_schema(batch.schema)
        kind = batch.column("kind")
        is_gm = pc.fill_null(pc.equal(kind, GROUP_METADATA), False)
        is_group = pc.or_(is_gm, pc.fill_null(pc.equal(kind, GROUP_REASON), False))
        if pc.any(is_group).as_py():
            self._follow(batch.filter(is_group))
            others = batch.filter(pc.invert(is_gm))
        else:
            others = batch
        if others.num_rows:
            yield _with_nulls(others, schema)
        if len(self.done) >= self.chunk_rows:
            yield self._done_batch(schema)

    def finish(self, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        """What is still open: each group's latest write carries its members."""
        for group in self.groups.values():
            if group.last is not None:
                group.last.current_members = group.last.members
            self.done += group.open
            group.open = []
        while self.done:
            yield self._done_batch(history_schema(schema))

    def _follow(self, rows: pa.RecordBatch) -> None:
        """GroupMetadata and reason records in offset order."""
        cols = {name: rows.column(name).to_pylist() for name in (
            "kind", "group_id", "offset", "timestamp", "tombstone", "generation", "members", "reason_timestamp",
            "reason_api", "reason_member_id", "reason_instance_id", "reason", "reason_cause")}
        gm = rows.filter(pc.equal(rows.column("kind"), GROUP_METADATA))
        first_row = self.kept_rows
        if gm.num_rows:
            self.kept.append(pa.Table.from_batches([gm.drop_columns(["members"])]))
            self.kept_rows += gm.num_rows
        row = first_row
        for i, kind in enumerate(cols["kind"]):
            group = self.groups.get(cols["group_id"][i])
            if group is None:
                group = self.groups[cols["group_id"][i]] = _Group()
            if kind == GROUP_METADATA:
                members = [(m["member_id"], m["group_instance_id"], m["client_id"], m["client_host"])
                           for m in cols["members"][i] or ()]
                self._metadata(group, row, cols["offset"][i], cols["timestamp"][i], cols["tombstone"][i],
                               cols["generation"][i], members)
                row += 1
            elif not cols["tombstone"][i]:
                reason = (cols["reason_timestamp"][i], cols["reason_api"][i], cols["reason_member_id"][i],
                          cols["reason_instance_id"][i], cols["reason"][i])
                self._reason(group, cols["offset"][i], reason, cols["reason_cause"][i])

    def _metadata(self, group: _Group, row: int, offset: int, timestamp: int, tombstone: bool,
                  generation: int | None, members: list[Member]) -> None:
        prev = group.last
        kind = write_kind(tombstone, generation, prev)
        w = Write(row, offset, tombstone, generation, members, kind, sum(m[1] is not None for m in members))
        prev_members = [] if prev is None or prev.tombstone else prev.members
        if kind in ("generation", "static_replacement"):
            ids, prev_ids = {m[0] for m in members}, {m[0] for m in prev_members}
            joined = [m for m in members if m[0] not in prev_ids]
            left = [m for m in prev_members if m[0] not in ids]
            if kind == "generation":
                complete_rebalance(w, prev, prev_members, joined, left, group.reasons, group.causes)
                group.reasons, group.causes = [], []
            w.events = membership_events(w, joined, left)
        if kind in ("generation", "deleted"):
            # The open generation (if any) lasted until now; nothing before this write changes any more.
            for earlier in group.open:
                if earlier.write == "generation":
                    earlier.end_ms = timestamp
            self.done += group.open
            group.open = []
        group.open.append(w)
        group.last = w

    def _reason(self, group: _Group, offset: int, reason: Reason, cause: str | None) -> None:
        if cause:
            group.causes.append((reason[2], reason[3], cause))
            if not reason[4]:
                return  # a removal the client gave no text for: not a KIP-800 reason
        last = group.last
        if last is not None and last.write == "static_replacement" and last.offset == offset - 1:
            return  # a static member that rejoined with a reason, absorbed by that replacement
        group.reasons.append(reason)

    def _done_batch(self, schema: pa.Schema) -> pa.RecordBatch:
        done, self.done = self.done[:self.chunk_rows], self.done[self.chunk_rows:]
        kept = pa.concat_tables(self.kept) if len(self.kept) > 1 else self.kept[0]
        self.kept = [kept]
        base = kept.take(pa.array([w.row for w in done], pa.int64()))
        history = {
            "write": [w.write for w in done], "member_count": [len(w.members) for w in done],
            "static_members": [w.static_members for w in done], "trigger": [w.trigger for w in done],
            "reasons": [w.reasons for w in done], "end_ms": [w.end_ms for w in done],
            "joined": [w.joined for w in done], "left": [w.left for w in done], "expired": [w.expired for w in done],
            "static_rejoined": [w.static_rejoined for w in done], "events": [w.events for w in done],
            "current_members": [w.current_members for w in done], "removed": [w.removed for w in done]}
        arrays = [base.column(f.name).combine_chunks() if f.name in base.column_names
                  else pa.array(history[f.name], f.type) for f in schema]
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _with_nulls(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    n = batch.num_rows
    arrays = [batch.column(f.name) if f.name in batch.schema.names else pa.nulls(n, f.type) for f in schema]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def read_history(batches: Iterator[pa.RecordBatch], schema: pa.Schema, chunk_rows: int = 131072
                 ) -> Iterator[pa.RecordBatch]:
    """A partition's batches, in offset order, as `groups=history` rows (`history_schema(schema)`)."""
    history = GroupHistory(chunk_rows)
    for batch in batches:
        yield from history.add(batch)
    yield from history.finish(schema)
