"""Property: replaying the emitted record log rebuilds exactly the live durable state."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.messages import DeleteGroupsRequest, OffsetDeleteRequest
from tests.core.context import CoordinatorContext

GROUPS = ["g1", "g2"]
INSTANCES = [None, None, "i1", "i2"]
PROTOCOLS = [[("range", b"a")], [("range", b"b")], [("range", b""), ("roundrobin", b"")]]

op = st.one_of(
    st.tuples(st.just("join"), st.sampled_from(GROUPS), st.integers(0, 5), st.sampled_from(INSTANCES),
              st.sampled_from(PROTOCOLS), st.sampled_from([4, 5, 8, 9])),
    st.tuples(st.just("sync"), st.sampled_from(GROUPS), st.integers(0, 5)),
    st.tuples(st.just("heartbeat"), st.sampled_from(GROUPS), st.integers(0, 5)),
    st.tuples(st.just("leave"), st.sampled_from(GROUPS), st.integers(0, 5), st.booleans()),
    st.tuples(st.just("commit"), st.sampled_from(GROUPS), st.integers(-1, 5), st.integers(0, 2)),
    st.tuples(st.just("advance"), st.sampled_from([1, 1000, 3000, 10_000, 60_000, 300_000, 8 * 86_400_000])),
    st.tuples(st.just("delete"), st.sampled_from(GROUPS)),
    st.tuples(st.just("offset_delete"), st.sampled_from(GROUPS)),
)


def known_member(ctx: CoordinatorContext, group_id: str, index: int) -> tuple[str, str | None, int]:
    group = ctx.shard.state.groups.get(group_id)
    if group is None or not group.members:
        return f"ghost-{index}", None, 0
    members = list(group.members.values())
    m = members[index % len(members)]
    return m.member_id, m.group_instance_id, group.generation_id


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, max_size=40))
def test_replaying_the_log_rebuilds_the_durable_state(ops: list[tuple]) -> None:
    ctx = CoordinatorContext()
    ctx._apply(ctx.shard.start_offset_expiration(0))
    pending: dict[str, list[str]] = {g: [] for g in GROUPS}
    for o in ops:
        kind = o[0]
        if kind == "join":
            _, g, i, instance, protocols, version = o
            if instance is None and pending[g] and i % 2:
                member_id = pending[g].pop()
            elif i % 3 == 0:
                member_id, instance, _ = known_member(ctx, g, i)
            else:
                member_id = ""
            _, out = ctx.join(g, member_id, instance_id=instance if version >= 5 else None, protocols=protocols,
                              version=version, reason=f"r{i}" if i % 2 else None)
            if out.response is not None and out.response.error_code == 79:
                pending[g].append(out.response.member_id)
        elif kind == "sync":
            member_id, instance, gen = known_member(ctx, o[1], o[2])
            group = ctx.shard.state.groups.get(o[1])
            assignments = {m: b"x" for m in group.members} if group else {}
            ctx.sync(o[1], member_id, gen, instance_id=instance, assignments=assignments,
                     protocol_name=group.protocol_name if group else None)
        elif kind == "heartbeat":
            member_id, instance, gen = known_member(ctx, o[1], o[2])
            ctx.heartbeat(o[1], member_id, gen, instance_id=instance)
        elif kind == "leave":
            member_id, instance, _ = known_member(ctx, o[1], o[2])
            ctx.leave(o[1], [("" if o[3] and instance else member_id, instance)], reason="bye")
        elif kind == "commit":
            _, g, i, partition = o
            if i < 0:
                ctx.commit(g, {("t", partition): 1})
            else:
                member_id, instance, gen = known_member(ctx, g, i)
                ctx.commit(g, {("t", partition): i}, generation_id=gen, member_id=member_id, instance_id=instance)
        elif kind == "advance":
            ctx.advance(o[1])
        elif kind == "delete":
            ctx.send(DeleteGroupsRequest(groups_names=[o[1]]), 2)
        elif kind == "offset_delete":
            T, P = OffsetDeleteRequest.OffsetDeleteRequestTopic, OffsetDeleteRequest.OffsetDeleteRequestPartition
            ctx.send(OffsetDeleteRequest(group_id=o[1], topics=[T(name="t", partitions=[P(partition_index=0)])]), 0)
        ctx.assert_replay_matches()
