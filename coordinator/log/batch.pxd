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
