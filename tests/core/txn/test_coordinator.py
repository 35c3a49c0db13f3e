"""The transaction coordinator core: the spec's (transactions.md §15) coordinator cases, each
ending with the state rebuilt from the written records equal to the live one."""

from __future__ import annotations

import dataclasses

from coordinator.core.txn import TxnConfig, TxnOutcome, TxnState, decode_txn_record, txn_record
from protocol.error_codes import ErrorCode as E
from tests.core.txn.context import TxnContext

T0, T1, T2 = ("t", 0), ("t", 1), ("t", 2)
S = TxnState


def test_init_creates_then_bumps_the_epoch_and_writes_kafkas_record() -> None:  # §15 cases 3-4
    ctx = TxnContext()
    first = ctx.init()
    assert (first.code, first.producer_id, first.producer_epoch) == (E.NONE, 1000, 0)
    tid, meta = decode_txn_record(ctx.log[0])
    assert (tid, meta.producer_id, meta.producer_epoch, meta.state, meta.partitions, meta.start_ms,
            meta.timeout_ms) == ("tx", 1000, 0, S.EMPTY, frozenset(), -1, 60_000)
    assert ctx.log[0].value[:2] == b"\x00\x01"  # value version 1
    assert [(o.producer_id, o.producer_epoch) for o in (ctx.init(), ctx.init())] == [(1000, 1), (1000, 2)]
    ctx.assert_replay_matches()


def test_init_refuses_bad_requests() -> None:  # §15 case 5
    ctx = TxnContext()
    assert ctx.init(tid="").code == E.INVALID_REQUEST
    assert ctx.init(timeout_ms=0).code == E.INVALID_TRANSACTION_TIMEOUT
    assert ctx.init(timeout_ms=900_001).code == E.INVALID_TRANSACTION_TIMEOUT
    assert ctx.init(pid=5, epoch=-1).code == E.INVALID_REQUEST
    assert ctx.log == []


def test_init_with_an_expected_epoch_retries_and_fences() -> None:  # §15 case 6
    ctx = TxnContext()
    for _ in range(4):
        ctx.init()
    assert ctx.coordinator.transactions["tx"].producer_epoch == 3
    bumped = ctx.init(pid=1000, epoch=3)
    assert (bumped.code, bumped.producer_epoch) == (E.NONE, 4)
    retry = ctx.init(pid=1000, epoch=3)
    assert (retry.code, retry.producer_epoch) == (E.NONE, 4)
    assert ctx.init(pid=1000, epoch=1).code == E.PRODUCER_FENCED
    assert ctx.init(pid=77, epoch=4).code == E.PRODUCER_FENCED
    ctx.assert_replay_matches()


def test_an_exhausted_epoch_rotates_to_a_new_producer_id() -> None:  # §15 case 7
    ctx = TxnContext()
    ctx.init()
    meta = ctx.coordinator.transactions["tx"]
    meta.producer_epoch = 32766
    rotated = ctx.init(pid=1000, epoch=32766)
    assert (rotated.code, rotated.producer_id, rotated.producer_epoch) == (E.NONE, 1001, 0)
    again = ctx.init(pid=1000, epoch=32766)
    assert (again.code, again.producer_id, again.producer_epoch) == (E.NONE, 1001, 0)


def test_add_partitions_starts_a_transaction_once_and_checks_the_producer() -> None:  # §15 cases 8, 9, 11
    ctx = TxnContext()
    ctx.init()
    assert ctx.add("tx", 1000, 0, T0, T1).code == E.NONE
    meta = ctx.coordinator.transactions["tx"]
    assert (meta.state, meta.partitions, meta.start_ms) == (S.ONGOING, frozenset({T0, T1}), ctx.now)
    written = len(ctx.log)
    assert ctx.add("tx", 1000, 0, T0).code == E.NONE
    assert len(ctx.log) == written  # nothing new to write
    assert ctx.add("nope", 1000, 0, T0).code == E.INVALID_PRODUCER_ID_MAPPING
    assert ctx.add("tx", 1001, 0, T0).code == E.INVALID_PRODUCER_ID_MAPPING
    assert ctx.add("tx", 1000, 7, T0).code == E.PRODUCER_FENCED
    ctx.assert_replay_matches()


def test_commit_prepares_then_completes_after_the_markers() -> None:  # §15 cases 12, 22, 27
    ctx = TxnContext()
    ctx.init()
    ctx.add("tx", 1000, 0, T0, T1)
    out = ctx.end("tx", 1000, 0, commit=True)
    assert out.code == E.NONE
    [job] = out.markers
    assert (job.producer_id, job.producer_epoch, job.commit, job.partitions) == (1000, 0, True, frozenset({T0, T1}))
    assert ctx.coordinator.transactions["tx"].state is S.PREPARE_COMMIT
    assert ctx.add("tx", 1000, 0, T2).code == E.CONCURRENT_TRANSACTIONS
    assert ctx.init().code == E.CONCURRENT_TRANSACTIONS
    assert ctx.end("tx", 1000, 0, commit=True).code == E.CONCURRENT_TRANSACTIONS
    assert ctx.end("tx", 1000, 0, commit=False).code == E.INVALID_TXN_STATE
    ctx.assert_replay_matches()
    ctx.finish_markers(out)
    meta = ctx.coordinator.transactions["tx"]
    assert (meta.state, meta.partitions) == (S.COMPLETE_COMMIT, frozenset())
    assert ctx.end("tx", 1000, 0, commit=True).code == E.NONE  # a retry
    assert ctx.end("tx", 1000, 0, commit=False).code == E.INVALID_TXN_STATE
    ctx.assert_replay_matches()


def test_end_txn_checks() -> None:  # §15 cases 27, 28
    ctx = TxnContext()
    ctx.init()
    assert ctx.end("tx", 1000, 0, commit=True).code == E.INVALID_TXN_STATE  # Empty
    ctx.add("tx", 1000, 0, T0)
    assert ctx.end("tx", 1000, 3, commit=True).code == E.PRODUCER_FENCED
    assert ctx.end("zz", 1000, 0, commit=True).code == E.INVALID_PRODUCER_ID_MAPPING


def test_init_fences_an_open_transaction_by_aborting_it_with_a_bumped_epoch() -> None:  # §15 case 30
    """transaction.version 2 (this server's, whatever the client's): the abort bumps the epoch once from
    the fenced producer's and remembers that one as the last epoch, so the fenced producer's own re-init
    is answered as a retry (TransactionCoordinator.endTransaction, as Kafka 4.4 answers it)."""
    ctx = TxnContext()
    ctx.init()
    ctx.add("tx", 1000, 0, T0)
    fence = ctx.init()
    assert fence.code == E.CONCURRENT_TRANSACTIONS
    [job] = fence.markers
    assert (job.producer_epoch, job.commit, job.partitions) == (1, False, frozenset({T0}))
    meta = ctx.coordinator.transactions["tx"]
    assert (meta.state, meta.client_version, meta.last_producer_epoch) == (S.PREPARE_ABORT, 2, 0)
    assert ctx.init().code == E.CONCURRENT_TRANSACTIONS  # markers still pending
    ctx.finish_markers(fence)
    assert ctx.end("tx", 1000, 0, commit=True, bump=True).code == E.INVALID_TXN_STATE  # a "retry" of the abort
    zombie = ctx.init(pid=1000, epoch=0)
    assert (zombie.code, zombie.producer_id, zombie.producer_epoch) == (E.NONE, 1000, 1)
    retry = ctx.init()
    assert (retry.code, retry.producer_id, retry.producer_epoch) == (E.NONE, 1000, 2)
    assert ctx.end("tx", 1000, 0, commit=True).code == E.PRODUCER_FENCED  # the zombie
    ctx.assert_replay_matches()


def test_a_server_on_transaction_version_1_fences_and_forgets_the_last_epoch() -> None:
    ctx = TxnContext(TxnConfig(transaction_version=1))
    ctx.init()
    ctx.add("tx", 1000, 0, T0, client_version=2)
    fence = ctx.init()
    assert [j.producer_epoch for j in fence.markers] == [1]
    meta = ctx.coordinator.transactions["tx"]
    assert (meta.client_version, meta.last_producer_epoch) == (0, -1)  # endTransactionWithTV1
    ctx.finish_markers(fence)
    assert ctx.init(pid=1000, epoch=0).code == E.PRODUCER_FENCED
    assert ctx.init().producer_epoch == 2
    ctx.assert_replay_matches()


def test_a_tv2_fence_keeps_the_client_version_in_the_record_and_rotates_an_exhausted_epoch() -> None:
    """ClientTransactionVersion is tagged field 2 of the value. A fence from 32766 aborts at 32767 with
    the next producer id allocated (tagged field 1), which the Complete record moves to at epoch 0."""
    ctx = TxnContext()
    ctx.init()
    assert ctx.add("tx", 1000, 0, T0, client_version=2).code == E.NONE
    assert decode_txn_record(ctx.log[-1])[1].client_version == 2
    assert ctx.log[-1].value.endswith(b"\x01\x02\x02\x00\x02")  # one tagged field: tag 2, 2 bytes, int16 2
    ctx.assert_replay_matches()
    meta = ctx.coordinator.transactions["tx"]
    ctx.apply(TxnOutcome(records=[txn_record(dataclasses.replace(meta, producer_epoch=32766))]))
    fence = ctx.init()
    assert [(j.producer_id, j.producer_epoch) for j in fence.markers] == [(1000, 32767)]
    assert decode_txn_record(ctx.log[-1])[1].next_producer_id == 1001
    ctx.assert_replay_matches()
    ctx.finish_markers(fence)
    meta = ctx.coordinator.transactions["tx"]
    assert (meta.state, meta.producer_id, meta.producer_epoch, meta.previous_producer_id) == (
        S.COMPLETE_ABORT, 1001, 0, 1000)
    assert ctx.init().producer_id == 1001
    ctx.assert_replay_matches()


def test_a_timed_out_tv2_transaction_aborts_like_a_fence() -> None:
    ctx = TxnContext()
    ctx.init(timeout_ms=1000)
    ctx.add("tx", 1000, 0, T0, client_version=2)
    ctx.now += 1001
    [abort] = [ctx.apply(o) for o in ctx.coordinator.abort_timed_out(ctx.now)]
    assert [j.producer_epoch for j in abort.markers] == [1]
    ctx.finish_markers(abort)
    assert ctx.state_and_epoch("tx") == (S.COMPLETE_ABORT, 1)
    assert decode_txn_record(ctx.log[-1])[1].client_version == 2
    ctx.assert_replay_matches()


def test_end_txn_v5_at_an_exhausted_epoch_rotates_to_the_next_producer_id() -> None:
    """prepareAbortOrCommit with a NextProducerId, prepareComplete moving to it: the answer carries
    the new id at epoch 0, the markers the old id at epoch 32767, a retry gets the new id again."""
    ctx = TxnContext()
    ctx.init()
    ctx.add("tx", 1000, 0, T0, client_version=2)
    meta = ctx.coordinator.transactions["tx"]
    ctx.apply(TxnOutcome(records=[txn_record(dataclasses.replace(meta, producer_epoch=32766))]))
    out = ctx.end("tx", 1000, 32766, commit=True, bump=True)
    assert (out.code, out.producer_id, out.producer_epoch) == (E.NONE, 1001, 0)
    [job] = out.markers
    assert (job.producer_id, job.producer_epoch, job.commit) == (1000, 32767, True)
    assert decode_txn_record(ctx.log[-1])[1].next_producer_id == 1001
    assert ctx.end("tx", 1000, 32766, commit=True, bump=True).code == E.CONCURRENT_TRANSACTIONS
    ctx.finish_markers(out)
    meta = ctx.coordinator.transactions["tx"]
    assert (meta.state, meta.producer_id, meta.producer_epoch, meta.previous_producer_id, meta.next_producer_id) \
        == (S.COMPLETE_COMMIT, 1001, 0, 1000, -1)
    retry = ctx.end("tx", 1000, 32766, commit=True, bump=True)
    assert (retry.code, retry.producer_id, retry.producer_epoch) == (E.NONE, 1001, 0)
    assert ctx.add("tx", 1001, 0, T1, client_version=2).code == E.NONE
    ctx.assert_replay_matches()


def test_timed_out_transactions_are_aborted_and_prepared_ones_left_alone() -> None:  # §15 cases 33, 34
    ctx = TxnContext()
    ctx.init("a", timeout_ms=1000)
    ctx.add("a", 1000, 0, T0)
    ctx.init("b", timeout_ms=1000)
    ctx.add("b", 1001, 0, T1)
    ctx.end("b", 1001, 0, commit=True)
    ctx.now += 1001
    [abort] = [ctx.apply(o) for o in ctx.coordinator.abort_timed_out(ctx.now)]
    [job] = abort.markers
    assert (job.transactional_id, job.producer_epoch, job.commit) == ("a", 1, False)
    ctx.finish_markers(abort)
    assert ctx.coordinator.transactions["a"].state is S.COMPLETE_ABORT
    assert ctx.coordinator.transactions["b"].state is S.PREPARE_COMMIT
    assert ctx.end("a", 1000, 0, commit=True).code == E.PRODUCER_FENCED
    ctx.assert_replay_matches()


def test_idle_ids_expire_and_come_back_with_a_new_producer_id() -> None:  # §15 case 35
    ctx = TxnContext(TxnConfig(id_expiration_ms=1000))
    ctx.init()
    ctx.init("open")
    ctx.add("open", 1001, 0, T0)
    ctx.now += 1000
    ctx.apply(ctx.coordinator.expire_ids(ctx.now))
    assert sorted(ctx.coordinator.transactions) == ["open"]
    again = ctx.init()
    assert (again.producer_id, again.producer_epoch) == (1002, 0)
    ctx.assert_replay_matches()


def test_a_restart_resumes_the_markers_of_decided_transactions() -> None:  # §15 cases 36, 37
    ctx = TxnContext()
    ctx.init("c")
    ctx.add("c", 1000, 0, T0)
    ctx.end("c", 1000, 0, commit=True)
    ctx.init("o")
    ctx.add("o", 1001, 0, T1)
    reloaded = ctx.reloaded()
    [job] = reloaded.resume()
    assert (job.transactional_id, job.commit, job.partitions) == ("c", True, frozenset({T0}))
    assert reloaded.transactions["o"].state is S.ONGOING
    assert reloaded.transactions["o"].start_ms == ctx.now


def test_verify_answers_for_the_partitions_of_the_open_transaction() -> None:  # §15 case 14
    ctx = TxnContext()
    ctx.init()
    ctx.add("tx", 1000, 0, T0)
    verify = ctx.coordinator.verify
    assert verify("tx", 1000, 0, T0) == E.NONE
    assert verify("tx", 1000, 0, T2) == E.TRANSACTION_ABORTABLE
    assert verify("tx", 1000, 1, T0) == E.PRODUCER_FENCED
    assert verify("zz", 1000, 0, T0) == E.INVALID_PRODUCER_ID_MAPPING


def test_end_txn_v5_bumps_the_epoch_and_answers_retries() -> None:  # §15 cases 57, 58
    ctx = TxnContext()
    for _ in range(6):
        ctx.init()
    ctx.add("tx", 1000, 5, T0)
    out = ctx.end("tx", 1000, 5, commit=True, bump=True)
    assert (out.code, out.producer_id, out.producer_epoch) == (E.NONE, 1000, 6)
    assert out.markers[0].producer_epoch == 6
    ctx.finish_markers(out)
    retry = ctx.end("tx", 1000, 5, commit=True, bump=True)
    assert (retry.code, retry.producer_epoch) == (E.NONE, 6)
    empty_abort = ctx.end("tx", 1000, 6, commit=False, bump=True)
    assert (empty_abort.code, empty_abort.producer_epoch) == (E.NONE, 7)
    assert empty_abort.markers[0].partitions == frozenset()
    ctx.finish_markers(empty_abort)
    assert ctx.end("tx", 1000, 7, commit=True, bump=True).code == E.INVALID_TXN_STATE
    assert ctx.end("tx", 1000, 5, commit=False, bump=True).code == E.PRODUCER_FENCED
    ctx.assert_replay_matches()


def test_log_dump_describes_transaction_log_records() -> None:
    from coordinator.records import describe_transaction_log_record

    ctx = TxnContext()
    ctx.init()
    ctx.add("tx", 1000, 0, T0, ("__consumer_offsets", 7))
    lines = [describe_transaction_log_record(r.key, r.value) for r in ctx.log]
    assert lines[1] == (
        'TransactionLog key(type 0): {"TransactionalId":"tx"} value(v1): {"ProducerId":1000,'
        '"PreviousProducerId":-1,"NextProducerId":-1,"ProducerEpoch":0,"TransactionTimeoutMs":60000,'
        '"TransactionStatus":1,"TransactionPartitions":[{"Topic":"__consumer_offsets","PartitionIds":[7]},'
        '{"Topic":"t","PartitionIds":[0]}],"TransactionLastUpdateTimestampMs":1000000,'
        '"TransactionStartTimestampMs":1000000,"ClientTransactionVersion":0}')
    from coordinator.core.txn import txn_tombstone

    assert describe_transaction_log_record(txn_tombstone("tx").key, None) == (
        'TransactionLog key(type 0): {"TransactionalId":"tx"} value: tombstone')


def test_transaction_version_2_runs_on_implicit_adds_and_an_epoch_bumped_at_every_end() -> None:
    """KIP-890 part 2 as the Java client runs it: Produce v12 and TxnOffsetCommit v5 add their
    partitions through add_partitions (the broker's ADD_PARTITION), EndTxn v5 bumps the epoch and
    the next transaction uses the epoch it answered; the pre-bump epoch is fenced everywhere."""
    ctx = TxnContext()
    epoch = ctx.init().producer_epoch
    offsets = ("__consumer_offsets", 7)
    for commit in (True, False, True):
        assert ctx.add("tx", 1000, epoch, T0).code == E.NONE  # first batch in T0 (Produce v12)
        assert ctx.add("tx", 1000, epoch, offsets).code == E.NONE  # TxnOffsetCommit v5
        assert ctx.add("tx", 1000, epoch, T0).code == E.NONE  # a second batch: nothing new
        meta = ctx.coordinator.transactions["tx"]
        assert (meta.state, meta.partitions, meta.producer_epoch) == (S.ONGOING, frozenset({T0, offsets}), epoch)
        out = ctx.end("tx", 1000, epoch, commit=commit, bump=True)
        assert (out.code, out.producer_id, out.producer_epoch) == (E.NONE, 1000, epoch + 1)
        [job] = out.markers
        assert (job.producer_epoch, job.commit, job.partitions) == (epoch + 1, commit, frozenset({T0, offsets}))
        # While the markers are written: the next transaction's first add waits, a retry of the end too.
        assert ctx.add("tx", 1000, epoch + 1, T1).code == E.CONCURRENT_TRANSACTIONS
        assert ctx.end("tx", 1000, epoch, commit=commit, bump=True).code == E.CONCURRENT_TRANSACTIONS
        ctx.finish_markers(out)
        # A zombie still on the pre-bump epoch is fenced at its implicit add and its end.
        assert ctx.add("tx", 1000, epoch, T1).code == E.PRODUCER_FENCED
        assert ctx.end("tx", 1000, epoch, commit=not commit, bump=True).code == E.INVALID_TXN_STATE
        assert ctx.state_and_epoch("tx") == (S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT, epoch + 1)
        epoch += 1
    ctx.assert_replay_matches()

