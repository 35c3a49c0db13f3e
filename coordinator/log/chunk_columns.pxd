# Typed declarations Cython reads beside chunk_columns.py when it builds the accelerator
# (protocol/accel_build.py); the pure-Python source stays the reference (tests/protocol/test_accel.py).
#
# _frame_batches is the per-batch loop of the Spark reader: positions, lengths and header fields
# as C integers over the read chunk (`bytes`, from os.pread).

import cython


@cython.locals(n=Py_ssize_t, p=Py_ssize_t, rows=Py_ssize_t, batches=Py_ssize_t, last_header=Py_ssize_t,
               in_file=Py_ssize_t, batch_length=Py_ssize_t, end=Py_ssize_t, magic=cython.int, attributes=cython.int,
               count=Py_ssize_t, offsets=list, timestamps=list, keys=list, values=list,
               headers=list, raw=p_uchar, typed=bint, crc=Py_ssize_t,
               length_prefix=Py_ssize_t, least=Py_ssize_t, magic_v2=cython.int, crc_start=Py_ssize_t,
               control_bit=cython.int, compression_mask=cython.int, timestamp_type_bit=cython.int)
cpdef tuple _frame_batches(bytes data, Py_ssize_t file_pos, Py_ssize_t size, out, verify, skip_control,
                           skip_batches=*)


# _frame_plain is the per-record loop of the common batch: C integers over the batch's bytes, and
# direct appends to the columns' lists.
@cython.locals(p=Py_ssize_t, end=Py_ssize_t, length=Py_ssize_t, rec_end=Py_ssize_t, b=cython.int, delta=Py_ssize_t,
               column=list, data=p_uchar)
cpdef bint _frame_plain(bytes batch, Py_ssize_t count, base_offset, base_timestamp, list offsets, list timestamps,
                        list keys, list values, list headers)


@cython.locals(b=cython.int)
cdef Py_ssize_t _short_varint(const unsigned char* data, Py_ssize_t p, Py_ssize_t end) noexcept


# A header field read in place (at most 8 bytes: an unsigned 64-bit C integer).
@cython.locals(i=Py_ssize_t, value=cython.ulonglong)
cdef inline unsigned long long _big_endian(const unsigned char* data, Py_ssize_t p, Py_ssize_t size) noexcept
