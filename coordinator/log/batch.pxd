# Typed declarations Cython reads beside batch.py when it builds the accelerator
# (protocol/accel_build.py); the module's pure-Python source is unchanged by them and stays the
# reference (tests/protocol/test_accel.py feeds both builds the same batches).
#
# frame_records_into is the per-record loop of every reader of whole files (the Spark reader,
# tests.bench.spark_report): its positions, lengths and bytes are C integers over a `bytes` buffer
# (every caller passes bytes: a batch slice or a decompressed records section).

import cython


@cython.locals(p=Py_ssize_t, i=Py_ssize_t, size=Py_ssize_t, b=cython.int, length=Py_ssize_t, rec_end=Py_ssize_t,
               n=Py_ssize_t, zigzag=list)
cpdef frame_records_into(bytes data, Py_ssize_t start, Py_ssize_t end, Py_ssize_t count, base_offset,
                         base_timestamp, add_offset, add_timestamp, add_key, add_value, add_headers)


# build_keyed_batch_from_columns in one C pass (the coordinator's batch of every commit): the whole
# batch, header, records and CRC-32C, written into one new `bytes`, the same bytes as the pure
# framing (`_records_by_shape` / `_records`). It handles only what the coordinator passes: `list`s of
# `bytes` keys and `bytes`-or-None values and `int` timestamp and base offset within their fields;
# for anything else it returns None and the pure framing runs, which raises what it raises. `crc` is
# the module's crc32c function, called once on the CRC-covered bytes.
cdef extern from *:
    """
    static Py_ssize_t groupcoord_varint_size(unsigned long long z) {
        Py_ssize_t n = 1;
        while (z >= 0x80) { z >>= 7; n++; }
        return n;
    }
    static unsigned char *groupcoord_put_varint(unsigned char *at, unsigned long long z) {
        while (z >= 0x80) { *at++ = (unsigned char)(z | 0x80); z >>= 7; }
        *at++ = (unsigned char)z;
        return at;
    }
    static unsigned char *groupcoord_put_be(unsigned char *at, unsigned long long value, int size) {
        for (int i = size - 1; i >= 0; i--) { at[i] = (unsigned char)(value & 0xFF); value >>= 8; }
        return at + size;
    }
    /* A record's size after its length varint: attributes, timestamp delta and header count (3),
       the offset delta, the key and the value with their lengths (a null value: the byte 1). */
    static Py_ssize_t groupcoord_record_size(Py_ssize_t delta, PyObject *key, PyObject *value) {
        Py_ssize_t key_size = PyBytes_GET_SIZE(key);
        Py_ssize_t size = 3 + groupcoord_varint_size((unsigned long long)delta << 1)
            + groupcoord_varint_size((unsigned long long)key_size << 1) + key_size;
        if (value == Py_None) return size + 1;
        return size + groupcoord_varint_size((unsigned long long)PyBytes_GET_SIZE(value) << 1)
            + PyBytes_GET_SIZE(value);
    }
    static PyObject *groupcoord_keyed_batch(PyObject *keys, PyObject *values, PyObject *timestamp,
                                            PyObject *base_offset, PyObject *crc) {
        Py_ssize_t count, total = 61, i, size;
        long long ts, base;
        int overflow = 0;
        PyObject *batch, *view, *sum;
        unsigned char *start, *at;
        unsigned long crc_value;
        if (!PyList_CheckExact(keys) || !PyList_CheckExact(values) || !PyLong_CheckExact(timestamp)
                || !PyLong_CheckExact(base_offset)) Py_RETURN_NONE;
        count = PyList_GET_SIZE(keys);
        if (count == 0 || PyList_GET_SIZE(values) != count || count > 0x7FFFFFFF) Py_RETURN_NONE;
        ts = PyLong_AsLongLongAndOverflow(timestamp, &overflow);
        if (overflow) Py_RETURN_NONE;
        base = PyLong_AsLongLongAndOverflow(base_offset, &overflow);
        if (overflow) Py_RETURN_NONE;
        for (i = 0; i < count; i++) {
            PyObject *key = PyList_GET_ITEM(keys, i), *value = PyList_GET_ITEM(values, i);
            if (!PyBytes_CheckExact(key) || (value != Py_None && !PyBytes_CheckExact(value))) Py_RETURN_NONE;
            size = groupcoord_record_size(i, key, value);
            total += groupcoord_varint_size((unsigned long long)size << 1) + size;
            if (total > 0x7FFFFFFF) Py_RETURN_NONE;  /* batchLength is an int32: the pure framing reports it */
        }
        batch = PyBytes_FromStringAndSize(NULL, total);
        if (batch == NULL) return NULL;
        start = (unsigned char *)PyBytes_AS_STRING(batch);
        at = groupcoord_put_be(start, (unsigned long long)base, 8);
        at = groupcoord_put_be(at, (unsigned long long)(total - 12), 4);  /* batchLength */
        at = groupcoord_put_be(at, 0xFFFFFFFFu, 4);  /* partitionLeaderEpoch -1 */
        *at++ = 2;  /* magic */
        at += 4;  /* the CRC, written last */
        at = groupcoord_put_be(at, 0, 2);  /* attributes */
        at = groupcoord_put_be(at, (unsigned long long)(count - 1), 4);  /* lastOffsetDelta */
        at = groupcoord_put_be(at, (unsigned long long)ts, 8);  /* baseTimestamp */
        at = groupcoord_put_be(at, (unsigned long long)ts, 8);  /* maxTimestamp */
        at = groupcoord_put_be(at, 0xFFFFFFFFFFFFFFFFull, 8);  /* producerId -1 */
        at = groupcoord_put_be(at, 0xFFFFu, 2);  /* producerEpoch -1 */
        at = groupcoord_put_be(at, 0xFFFFFFFFu, 4);  /* baseSequence -1 */
        at = groupcoord_put_be(at, (unsigned long long)count, 4);  /* recordsCount */
        for (i = 0; i < count; i++) {
            PyObject *key = PyList_GET_ITEM(keys, i), *value = PyList_GET_ITEM(values, i);
            Py_ssize_t key_size = PyBytes_GET_SIZE(key);
            at = groupcoord_put_varint(at, (unsigned long long)groupcoord_record_size(i, key, value) << 1);
            *at++ = 0;  /* attributes */
            *at++ = 0;  /* timestamp delta: every record has the batch's timestamp */
            at = groupcoord_put_varint(at, (unsigned long long)i << 1);
            at = groupcoord_put_varint(at, (unsigned long long)key_size << 1);
            memcpy(at, PyBytes_AS_STRING(key), key_size);
            at += key_size;
            if (value == Py_None) {
                *at++ = 1;  /* varint(-1): a tombstone */
            } else {
                Py_ssize_t value_size = PyBytes_GET_SIZE(value);
                at = groupcoord_put_varint(at, (unsigned long long)value_size << 1);
                memcpy(at, PyBytes_AS_STRING(value), value_size);
                at += value_size;
            }
            *at++ = 0;  /* no headers */
        }
        view = PyMemoryView_FromMemory((char *)start + 21, total - 21, PyBUF_READ);
        if (view == NULL) { Py_DECREF(batch); return NULL; }
        sum = PyObject_CallOneArg(crc, view);
        Py_DECREF(view);
        if (sum == NULL) { Py_DECREF(batch); return NULL; }
        crc_value = PyLong_AsUnsignedLong(sum);
        Py_DECREF(sum);
        if (crc_value == (unsigned long)-1 && PyErr_Occurred()) { Py_DECREF(batch); return NULL; }
        groupcoord_put_be(start + 17, (unsigned long long)crc_value, 4);
        return batch;
    }
    """
    object _keyed_batch_in_c "groupcoord_keyed_batch"(object keys, object values, object timestamp,
                                                      object base_offset, object crc)
