"""One librdkafka share consumer (KIP-932, librdkafka's preview `rd_kafka_share_*` C API) for pytest,
driven through ctypes over the librdkafka that the confluent-kafka wheel bundles:

    python tests/clients/rdkafka_share_member.py BOOTSTRAP TOPIC GROUP NAME [key=value ...]

The pairs are librdkafka configs, except:
- test.mode=explicit|implicit: share.acknowledgement.mode (implicit acknowledges nothing itself,
  so every record is accepted);
- test.release.mod=N: release, on its first delivery, each record whose offset is 0 mod N;
- test.reject.mod=M: reject each record whose offset is 1 mod M (the rest are accepted);
- test.commit=sync|none: commit_sync after each batch (the default), or never (the acknowledgements
  then ride on the next poll, and the last ones on close);
- test.close.after=K: close right after the K-th batch, without another poll or commit (the last
  acknowledgements then ride on the close);
- test.stall.after=K: after K committed batches, take one more and hold it unacknowledged (its
  records typed HELD) until killed.

Prints JSON lines like groupcoord.clients.ShareMember: ``polled`` after the first poll,
``delivered`` with [partition, offset, deliveryCount, type] per record of a batch, ``committed``
with the partitions whose acknowledgements rd_kafka_share_commit_sync() reported without error,
``warning`` for a failed call, ``error`` for a fatal one. Closing stdin closes the consumer the
ordinary way (rd_kafka_share_consumer_close, which leaves the group).

The C API is used directly (no header: the few prototypes and the public struct layouts of rdkafka.h
are declared below) since confluent-kafka's Python layer has no share consumer yet.
"""

from __future__ import annotations

import ctypes
import glob
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

MIN_VERSION = 0x020F0000  # 2.15.0: the first librdkafka with the share consumer
ACCEPT, RELEASE, REJECT = 1, 2, 3  # rd_kafka_share_AcknowledgeType_t
TYPE_NAMES = {ACCEPT: "ACCEPT", RELEASE: "RELEASE", REJECT: "REJECT"}
CONF_OK = 0
PARTITION_UA = -1


class Message(ctypes.Structure):
    """rd_kafka_message_t (its public layout)."""

    _fields_ = [("err", ctypes.c_int), ("rkt", ctypes.c_void_p), ("partition", ctypes.c_int32),
                ("payload", ctypes.c_void_p), ("len", ctypes.c_size_t), ("key", ctypes.c_void_p),
                ("key_len", ctypes.c_size_t), ("offset", ctypes.c_int64), ("_private", ctypes.c_void_p)]


class TopicPartition(ctypes.Structure):
    """rd_kafka_topic_partition_t."""

    _fields_ = [("topic", ctypes.c_char_p), ("partition", ctypes.c_int32), ("offset", ctypes.c_int64),
                ("metadata", ctypes.c_void_p), ("metadata_size", ctypes.c_size_t), ("opaque", ctypes.c_void_p),
                ("err", ctypes.c_int), ("_private", ctypes.c_void_p)]


class TopicPartitionList(ctypes.Structure):
    """rd_kafka_topic_partition_list_t."""

    _fields_ = [("cnt", ctypes.c_int), ("size", ctypes.c_int), ("elems", ctypes.POINTER(TopicPartition))]


def library_path() -> Path:
    """GC_LIBRDKAFKA, else the librdkafka bundled in the confluent-kafka wheel."""
    override = os.environ.get("GC_LIBRDKAFKA")
    if override:
        return Path(override)
    import confluent_kafka

    site = Path(confluent_kafka.__file__).resolve().parent.parent
    found = sorted(glob.glob(str(site / "confluent_kafka.libs" / "librdkafka*.so*")))
    if not found:
        raise FileNotFoundError(f"no librdkafka in {site / 'confluent_kafka.libs'}")
    return Path(found[0])


def load() -> ctypes.CDLL:
    lib = ctypes.CDLL(str(library_path()))
    p, i, c = ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p
    signatures: dict[str, tuple[Any, list[Any]]] = {
        "rd_kafka_version": (i, []),
        "rd_kafka_version_str": (c, []),
        "rd_kafka_conf_new": (p, []),
        "rd_kafka_conf_set": (i, [p, c, c, c, ctypes.c_size_t]),
        "rd_kafka_share_consumer_new": (p, [p, c, ctypes.c_size_t]),
        "rd_kafka_topic_partition_list_new": (ctypes.POINTER(TopicPartitionList), [i]),
        "rd_kafka_topic_partition_list_add": (p, [ctypes.POINTER(TopicPartitionList), c, ctypes.c_int32]),
        "rd_kafka_topic_partition_list_destroy": (None, [ctypes.POINTER(TopicPartitionList)]),
        "rd_kafka_share_subscribe": (i, [p, ctypes.POINTER(TopicPartitionList)]),
        "rd_kafka_share_poll": (p, [p, i, ctypes.POINTER(p)]),
        "rd_kafka_messages_count": (ctypes.c_size_t, [p]),
        "rd_kafka_messages_get": (ctypes.POINTER(Message), [p, ctypes.c_size_t]),
        "rd_kafka_messages_destroy": (None, [p]),
        "rd_kafka_message_delivery_count": (ctypes.c_int16, [ctypes.POINTER(Message)]),
        "rd_kafka_share_acknowledge_type": (i, [p, ctypes.POINTER(Message), i]),
        "rd_kafka_share_commit_sync": (p, [p, i, ctypes.POINTER(ctypes.POINTER(TopicPartitionList))]),
        "rd_kafka_share_consumer_close": (p, [p]),
        "rd_kafka_share_destroy": (p, [p]),
        "rd_kafka_error_code": (i, [p]),
        "rd_kafka_error_string": (c, [p]),
        "rd_kafka_error_is_fatal": (i, [p]),
        "rd_kafka_error_destroy": (None, [p]),
        "rd_kafka_err2name": (c, [i]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype, function.argtypes = restype, argtypes
    return lib


def emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


class ShareConsumer:
    def __init__(self, lib: ctypes.CDLL, config: dict[str, str]) -> None:
        self.lib = lib
        errstr = ctypes.create_string_buffer(512)
        conf = lib.rd_kafka_conf_new()
        for key, value in config.items():
            if lib.rd_kafka_conf_set(conf, key.encode(), value.encode(), errstr, len(errstr)) != CONF_OK:
                raise ValueError(f"{key}={value}: {errstr.value.decode()}")
        self.handle = lib.rd_kafka_share_consumer_new(conf, errstr, len(errstr))
        if not self.handle:
            raise RuntimeError(f"rd_kafka_share_consumer_new: {errstr.value.decode()}")

    def take_error(self, error: int | None) -> dict[str, Any] | None:
        """The error object's facts, the object freed; None for no error."""
        if not error:
            return None
        facts = {"code": self.lib.rd_kafka_err2name(self.lib.rd_kafka_error_code(error)).decode(),
                 "message": self.lib.rd_kafka_error_string(error).decode(errors="replace"),
                 "fatal": bool(self.lib.rd_kafka_error_is_fatal(error))}
        self.lib.rd_kafka_error_destroy(error)
        return facts

    def subscribe(self, topic: str) -> None:
        topics = self.lib.rd_kafka_topic_partition_list_new(1)
        self.lib.rd_kafka_topic_partition_list_add(topics, topic.encode(), PARTITION_UA)
        err = self.lib.rd_kafka_share_subscribe(self.handle, topics)
        self.lib.rd_kafka_topic_partition_list_destroy(topics)
        if err:
            raise RuntimeError(f"rd_kafka_share_subscribe: {self.lib.rd_kafka_err2name(err).decode()}")

    def commit_sync(self, timeout_ms: int) -> tuple[list[int], dict[str, str]]:
        """(partitions confirmed, {partition: error name}) of rd_kafka_share_commit_sync."""
        results = ctypes.POINTER(TopicPartitionList)()
        failure = self.take_error(self.lib.rd_kafka_share_commit_sync(self.handle, timeout_ms, ctypes.byref(results)))
        if failure is not None:
            return [], {"all": failure["code"]}
        ok: list[int] = []
        failed: dict[str, str] = {}
        if results:
            for index in range(results.contents.cnt):
                element = results.contents.elems[index]
                if element.err:
                    failed[str(element.partition)] = self.lib.rd_kafka_err2name(element.err).decode()
                else:
                    ok.append(element.partition)
            self.lib.rd_kafka_topic_partition_list_destroy(results)
        return ok, failed

    def close(self) -> None:
        failure = self.take_error(self.lib.rd_kafka_share_consumer_close(self.handle))
        if failure is not None:
            emit({"event": "warning", "message": f"close: {failure}"})
        self.take_error(self.lib.rd_kafka_share_destroy(self.handle))


def main(argv: list[str]) -> int:
    bootstrap, topic, group, name = argv[:4]
    release_mod = reject_mod = 0
    stall_after = close_after = -1
    commit = True
    mode = "explicit"
    config = {"bootstrap.servers": bootstrap, "group.id": group, "client.id": name}
    for pair in argv[4:]:
        key, _, value = pair.partition("=")
        if key == "test.release.mod":
            release_mod = int(value)
        elif key == "test.reject.mod":
            reject_mod = int(value)
        elif key == "test.mode":
            mode = value
        elif key == "test.commit":
            commit = value == "sync"
        elif key == "test.close.after":
            close_after = int(value)
        elif key == "test.stall.after":
            stall_after = int(value)
        else:
            config[key] = value
    config["share.acknowledgement.mode"] = mode
    lib = load()
    if lib.rd_kafka_version() < MIN_VERSION:
        emit({"event": "error", "message": f"librdkafka {lib.rd_kafka_version_str().decode()} has no share consumer"})
        return 2
    emit({"event": "version", "version": lib.rd_kafka_version_str().decode()})

    stop = threading.Event()

    def watch_stdin() -> None:
        for _ in sys.stdin:
            pass  # any line is ignored; only the end of stdin means stop
        stop.set()

    threading.Thread(target=watch_stdin, name="stdin", daemon=True).start()
    consumer = ShareConsumer(lib, config)
    announced = False
    seen_batches: list[int] = []
    try:
        consumer.subscribe(topic)
        while not stop.is_set():
            batch = ctypes.c_void_p()
            failure = consumer.take_error(lib.rd_kafka_share_poll(consumer.handle, 200, ctypes.byref(batch)))
            if failure is not None:
                lib.rd_kafka_messages_destroy(batch)
                if failure["fatal"]:
                    emit({"event": "error", "message": f"poll: {failure}"})
                    break
                emit({"event": "warning", "message": f"poll: {failure}"})
                continue
            if not announced:
                emit({"event": "polled"})
                announced = True
            count = lib.rd_kafka_messages_count(batch) if batch else 0
            if count == 0:
                lib.rd_kafka_messages_destroy(batch)
                continue
            seen: list[list[Any]] = []
            holding = len(seen_batches) == stall_after
            for index in range(count):
                message = lib.rd_kafka_messages_get(batch, index)
                record = message.contents
                if record.err:  # a record-level error: librdkafka acknowledged it itself
                    emit({"event": "warning", "message": f"record {record.partition}/{record.offset}: "
                                                         f"{lib.rd_kafka_err2name(record.err).decode()}"})
                    continue
                delivery_count = lib.rd_kafka_message_delivery_count(message)
                kind = ACCEPT
                if holding:
                    seen.append([record.partition, record.offset, delivery_count, "HELD"])
                    continue
                if mode == "explicit":
                    if release_mod and record.offset % release_mod == 0 and delivery_count == 1:
                        kind = RELEASE
                    elif reject_mod and record.offset % reject_mod == 1:
                        kind = REJECT
                    err = lib.rd_kafka_share_acknowledge_type(consumer.handle, message, kind)
                    if err:
                        emit({"event": "error", "message": f"acknowledge {record.partition}/{record.offset}: "
                                                           f"{lib.rd_kafka_err2name(err).decode()}"})
                seen.append([record.partition, record.offset, delivery_count, TYPE_NAMES[kind]])
            lib.rd_kafka_messages_destroy(batch)
            emit({"event": "delivered", "records": seen})
            seen_batches.append(len(seen))
            if holding:
                stop.wait()
                break
            if len(seen_batches) == close_after:
                break
            if commit:
                ok, failed = consumer.commit_sync(20_000)
                emit({"event": "committed", "partitions": ok, "failed": failed})
    except Exception as exc:  # reported to the test, which fails on it
        emit({"event": "error", "message": repr(exc)})
    finally:
        consumer.close()
        emit({"event": "closed"})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
