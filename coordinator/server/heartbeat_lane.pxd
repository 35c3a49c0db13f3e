# Cython reads this beside heartbeat_lane.py when the accelerator is built (protocol/accel_build.py):
# positions, sizes and versions become C integers over a `bytes` buffer, the lane a cdef class with
# C fields. The .py stays the reference; the manifest's CRC covers this file too.

import cython


cdef class HeartbeatLane:
    cdef public object broker
    cdef public object metrics
    cdef public dict partitions
    cdef public dict shards
    cdef public dict last_append
    cdef public dict deadlines
    cdef public dict session_keys
    cdef public object runtime

    cpdef bint bind(self)


@cython.locals(min_frame=Py_ssize_t, max_frame=Py_ssize_t, now_ms=cython.longlong, run_count=Py_ssize_t,
               run_version=int, run_code=int, run_started=double, size=cython.longlong, begin=Py_ssize_t,
               version=int, code=int, lane=HeartbeatLane)
cpdef Py_ssize_t cut_frames(object conn, bytes buf, Py_ssize_t start, Py_ssize_t end, list out) except? -1


@cython.locals(n=Py_ssize_t)
cdef tuple _string(bytes buf, Py_ssize_t pos, Py_ssize_t stop, bint compact)


@cython.locals(flexible=bint, pos=Py_ssize_t, generation_id=cython.longlong, code=int,
               deadline_ms=cython.longlong, key=tuple)
cdef int _heartbeat(HeartbeatLane lane, object conn, bytes buf, Py_ssize_t begin, Py_ssize_t stop, int version,
                    long long now_ms, list out) except? -2
