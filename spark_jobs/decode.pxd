# Typed declarations Cython reads beside decode.py when it builds the accelerator
# (protocol/accel_build.py); the pure-Python source stays the reference (tests/spark/test_transactional_scan.py).
#
# _headers_pass is the look for transactional batches: a batch header's length and attributes read
# through a pointer to the read chunk's bytes, positions as C integers.

import cython


@cython.locals(raw=p_uchar, length=Py_ssize_t, last_header=Py_ssize_t, at=Py_ssize_t, low=Py_ssize_t,
               txn=cython.int, least=Py_ssize_t, prefix=Py_ssize_t)
cpdef Py_ssize_t _headers_pass(bytes data, Py_ssize_t p, Py_ssize_t limit) except? -2
