"""Regular expression subscriptions inside a consumer group: what a heartbeat or a member removal does to the
group's resolved expressions (the rules themselves are in regex.py), as records and as the members'
derived `regex_topics`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import replace

from coordinator.core.consumer.model import ConsumerGroup, ConsumerMember
from coordinator.core.consumer.regex import RegexUpdate, ResolvedRegex, subscribed_regexes, update_regexes
from coordinator.core.consumer.topics import TopicsView
from coordinator.core.runtime.context import RequestContext
from coordinator.core.runtime.shard_state import ShardState
from coordinator.records import Record
from coordinator.records.consumer import regular_expression_record, regular_expression_tombstone


def topics_of(resolved: Mapping[str, ResolvedRegex], regex: str | None) -> tuple[str, ...]:
    found = resolved.get(regex) if regex else None
    return () if found is None else found.topics


def regex_refresh_due(state: ShardState, group: ConsumerGroup) -> bool:
    """Topics were created since this process last resolved the group's expressions (or it never did)."""
    return group.regex_checked_version is None or group.regex_checked_version < state.topics_created_version


def update_member_regexes(state: ShardState, group: ConsumerGroup, before: ConsumerMember,
                          updated: ConsumerMember, members_after: Mapping[str, ConsumerMember], topics: TopicsView,
                          ctx: RequestContext) -> RegexUpdate:
    """The group's expressions once `before` became `updated` (`members_after`: the members after the request).
    A refresh keeps the topics this request's principal may describe, as Kafka resolves with the context of
    the member that triggered it. Raises INVALID_REGULAR_EXPRESSION for a new expression RE2/J would refuse."""
    if not (group.resolved_regexes or before.subscribed_topic_regex or updated.subscribed_topic_regex):
        return RegexUpdate(group.resolved_regexes, {}, False)  # the common case: no member uses one (no scan)
    return update_regexes(
        group.resolved_regexes, subscribed_regexes(m.subscribed_topic_regex for m in group.members.values()),
        subscribed_regexes(m.subscribed_topic_regex for m in members_after.values()),
        before.subscribed_topic_regex or None, updated.subscribed_topic_regex or None,
        regex_refresh_due(state, group), topics.names(), topics.version, ctx.now_ms, ctx.may_describe_topic)


def regex_records(group_id: str, update: RegexUpdate) -> list[Record]:
    return [regular_expression_tombstone(group_id, regex) if resolved is None
            else regular_expression_record(group_id, regex, resolved.topics, resolved.version, resolved.timestamp_ms)
            for regex, resolved in sorted(update.changed.items())]


def with_regex_topics(members: MutableMapping[str, ConsumerMember], update: RegexUpdate) -> None:
    """Give the members of a changed expression their new topics, as replaying the records will."""
    if not update.changed:
        return
    for member_id, member in members.items():
        topics = topics_of(update.resolved, member.subscribed_topic_regex)
        if member.regex_topics != topics:
            members[member_id] = replace(member, regex_topics=topics)


def unused_regex_tombstones(group: ConsumerGroup, remaining: Iterable[ConsumerMember]) -> list[Record]:
    """Kafka's maybeDeleteResolvedRegularExpressions: expressions no remaining member subscribes to go."""
    if not group.resolved_regexes:
        return []
    still = subscribed_regexes(m.subscribed_topic_regex for m in remaining)
    return [regular_expression_tombstone(group.group_id, regex) for regex in sorted(group.resolved_regexes)
            if regex not in still]
