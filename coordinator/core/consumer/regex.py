"""KIP-848 regular expression subscriptions (docs/spec/consumer-protocol.md#regular-expressions).

A member may subscribe by SubscribedTopicRegex as well as (or instead of) SubscribedTopicNames. The group
resolves each distinct regular expression against the topic names it is given (the core does no I/O:
the shell's TopicsView is the topic image), keeps the result in a ConsumerGroupRegularExpression record
(type 16) per expression, and counts the resolved topics in every subscriber's subscription.

Syntax and matching are Kafka's: RE2/J (`com.google.re2j.Pattern.compile`) and a full match of the topic
name (`matcher(name).matches()`). We compile with RE2 itself (`google-re2`), whose syntax RE2/J ports;
the few places where RE2/J refuses what RE2 accepts (duplicate group names, `\\C`) are refused here as
well, and RE2's error texts are given RE2/J's words, as Kafka's message carries them.

When to resolve follows Kafka's `ConsumerGroup.maybeUpdateRegularExpressions`, except that Kafka resolves
on an executor and writes the result in a later batch, while here the heartbeat that triggers the
resolution carries its records (the topic set is data, so resolving is a pure computation).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import re2

from coordinator.core.consumer.errors import ConsumerGroupError
from protocol.error_codes import ErrorCode

#: Kafka's GroupMetadataManager.REGEX_BATCH_REFRESH_INTERVAL_MS: the least time between two refreshes of a
#: group's regular expressions, so a burst of joins or topic creations costs one rebalance.
REGEX_BATCH_REFRESH_INTERVAL_MS = 10_000

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would print every refused pattern to stderr

# RE2's error texts (re2/regexp.cc) -> RE2/J's descriptions (com.google.re2j.Parser's ERR_*).
_RE2J_WORDS = (
    ("missing )", "missing closing )"),
    ("unexpected )", "regexp/syntax: internal error"),  # RE2/J 1.8 fails with a stack underflow there
    ("missing ]", "missing closing ]"),
    ("bad repetition operator", "invalid nested repetition operator"),
    ("trailing \\", "trailing backslash at end of expression"),
    ("invalid repetition size", "invalid repeat count"),
    ("no argument for repetition operator", "missing argument to repetition operator"),
    ("invalid named capture group", "invalid named capture"),
    ("invalid perl operator", "invalid or unsupported Perl syntax"),
    ("invalid escape sequence", "invalid escape sequence"),
    ("invalid character class range", "invalid character class range"),
    ("invalid character class", "invalid character class"),
    ("invalid UTF-8", "invalid UTF-8"),
)


@dataclass(frozen=True, slots=True)
class ResolvedRegex:
    """One ConsumerGroupRegularExpression record: the matching topics (sorted), the topic image version
    they were resolved against and when (Kafka's ResolvedRegularExpression)."""

    topics: tuple[str, ...]
    version: int
    timestamp_ms: int


def _re2j_description(error: str) -> str:
    for prefix, words in _RE2J_WORDS:
        if error.startswith(prefix):
            return words
    return error.split(":", 1)[0]


def _re2j_only_refusals(regex: str) -> str | None:
    r"""What RE2/J refuses and RE2 accepts: a capture group name used twice, and `\C` (one byte)."""
    names: set[str] = set()
    i, in_class = 0, False
    while i < len(regex):
        c = regex[i]
        if c == "\\":
            if not in_class and regex[i + 1:i + 2] == "C":
                return "invalid escape sequence"
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            if regex[i + 1:i + 2] == "^":
                i += 1
            if regex[i + 1:i + 2] == "]":  # a leading ] is a literal
                i += 1
        elif c == "(" and regex.startswith(("(?P<", "(?<"), i) and not regex.startswith(("(?<=", "(?<!"), i):
            start = regex.index("<", i) + 1
            end = regex.find(">", start)
            if end > 0:
                name = regex[start:end]
                if name in names:
                    return "duplicate capture group name"
                names.add(name)
        i += 1
    return None


def compile_regex(regex: str) -> Any:
    """The compiled expression, or INVALID_REGULAR_EXPRESSION in Kafka's words
    (Utils.throwIfRegularExpressionIsInvalid)."""
    try:
        compiled = re2.compile(regex, _OPTIONS)
        problem = _re2j_only_refusals(regex)
    except re2.error as exc:
        text = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        problem = _re2j_description(text)
    if problem is not None:
        raise ConsumerGroupError(ErrorCode.INVALID_REGULAR_EXPRESSION,
                                 f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {problem}.")
    return compiled


def resolve_regexes(regexes: Iterable[str], topic_names: Iterable[str], version: int, now_ms: int,
                    may_describe: Callable[[str], bool] | None = None) -> dict[str, ResolvedRegex]:
    """Kafka's refreshRegularExpressions: every name each expression fully matches and, with an authorizer,
    that the requesting principal may DESCRIBE. An expression that no longer compiles (it was checked when
    it arrived) resolves to nothing."""
    compiled = {}
    for regex in regexes:
        try:
            compiled[regex] = compile_regex(regex)
        except ConsumerGroupError:
            compiled[regex] = None
    names = sorted(topic_names)
    if may_describe is not None:
        names = [n for n in names if may_describe(n)]
    return {regex: ResolvedRegex(tuple(n for n in names if pattern is not None and pattern.fullmatch(n)),
                                 version, now_ms)
            for regex, pattern in compiled.items()}


def subscribed_regexes(regexes: Iterable[str | None]) -> Counter[str]:
    """How many members subscribe to each expression (an empty one means none, as in Kafka)."""
    return Counter(regex for regex in regexes if regex)


@dataclass(slots=True)
class RegexUpdate:
    """What one member's request does to the group's expressions."""

    resolved: Mapping[str, ResolvedRegex]  # the group's resolutions once the records are replayed
    changed: dict[str, ResolvedRegex | None]  # the records to write: a resolution, or None (tombstone)
    bump: bool  # the group epoch must be bumped: some subscriber's topics changed
    refreshed: bool = False  # every expression was resolved again against the topics given


def update_regexes(resolved: Mapping[str, ResolvedRegex], before: Counter[str], after: Counter[str],
                   old_regex: str | None, new_regex: str | None, refresh_due: bool, topic_names: Iterable[str],
                   version: int, now_ms: int, may_describe: Callable[[str], bool] | None = None) -> RegexUpdate:
    """Kafka's maybeUpdateRegularExpressions for one member moving from `old_regex` to `new_regex`.

    `before`/`after`: subscribers per expression before and after the request; `refresh_due`: topics
    were created since the group last resolved its expressions (or this process never resolved them).
    Raises INVALID_REGULAR_EXPRESSION for a new expression RE2/J would refuse.
    """
    changed: dict[str, ResolvedRegex | None] = {}
    bump = require_refresh = refreshed = False
    if old_regex != new_regex:
        if new_regex:
            if before[new_regex] == 0:
                compile_regex(new_regex)  # a new expression is checked once, when it arrives
                require_refresh = True
            else:
                bump = new_regex in resolved  # its topics now count for this member too
        if old_regex and before[old_regex] > 0 and after[old_regex] == 0 and old_regex in resolved:
            changed[old_regex] = None  # the last subscriber left it
    remaining = {regex: r for regex, r in resolved.items() if changed.get(regex, r) is not None}
    # Refresh only if the group uses expressions, at most once per interval, and when some expression is
    # unresolved or topics were created since the last refresh.
    last_refresh_ms = max((r.timestamp_ms for r in resolved.values()), default=None)
    if ((require_refresh or before) and after
            and (last_refresh_ms is None or now_ms > last_refresh_ms + REGEX_BATCH_REFRESH_INTERVAL_MS)
            and (require_refresh or set(after) != set(remaining) or refresh_due)):
        for regex, fresh in resolve_regexes(sorted(after), topic_names, version, now_ms, may_describe).items():
            old = remaining.get(regex)
            if (() if old is None else old.topics) != fresh.topics:  # Kafka compares with an empty resolution
                bump = True
            changed[regex] = remaining[regex] = fresh
        refreshed = True
    return RegexUpdate(remaining, changed, bump, refreshed)
