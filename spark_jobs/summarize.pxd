# Typed declarations Cython reads beside summarize.py when it builds the accelerator
# (protocol/accel_build.py); the pure-Python source stays the reference (tests/spark/test_summarize_typed.py).

import cython


# Where a chunk's column holds None: one C loop over the list, comparing pointers.
@cython.locals(i=Py_ssize_t, found=list)
cpdef list _positions_of_none(list values)


# A record column (Python ints, None for null) written into Arrow's buffers by one C loop.
@cython.locals(n=Py_ssize_t, i=Py_ssize_t, k=Py_ssize_t, at=Py_ssize_t, nulls=Py_ssize_t, x=cython.longlong,
               out=p_uchar, bits=p_uchar, data=bytearray, valid=bytearray, low=cython.longlong, high=cython.longlong)
cpdef _int_column(list values, Py_ssize_t width)


# A version 0 ConsumerGroupCurrentMemberAssignmentValue's MemberEpoch and State read through a pointer.
@cython.locals(data=bytes, raw=p_uchar, k=Py_ssize_t, epoch=cython.longlong)
cpdef object _stable_epoch(object keys, object kid, object value)


# A chunk's split: its columns as lists and positions as C integers, so the loop over the few records
# that are not known commits indexes the lists directly.
@cython.locals(key_bytes=list, kids=list, offsets=list, timestamps=list, values=list, kind_code=list, index=dict,
               n=Py_ssize_t, start=Py_ssize_t, i=Py_ssize_t)
cpdef _split(pending, keys, records, others, folds, stats)
