# Typed declarations Cython reads beside offsets.py when it builds the accelerator
# (protocol/accel_build.py); the pure-Python source stays the reference (tests/core/test_offset_commit_runs.py
# runs both builds against offset_commit_record, tests/protocol/test_accel.py compares the builds' runs).
# The manifest's CRC covers this file too.
#
# offset_commit_run is a commit's per-partition loop: its columns are lists and its key cache a dict,
# so each append and cache lookup is a C call rather than a method lookup and call; and a value with
# empty metadata is written by _pack_value_v3_empty below instead of struct's pack.

import cython


# OffsetCommitValue v3 with empty metadata, big-endian: int16 version, int64 offset, int32 leader
# epoch, int16 metadata length (0; an argument so that the pure build binds struct's pack itself),
# int64 commit timestamp (offsets.py's _VALUE_V3_EMPTY, 24 bytes).
# Where struct raises struct.error (a field out of range, or not an int) this raises OverflowError or
# TypeError: offsets.py catches all three and lets the codec report the field. Only int objects are
# taken (struct refuses a float; a C int conversion would truncate it).
cdef extern from *:
    """
    static int groupcoord_long_in(PyObject *field, long long low, long long high, long long *out) {
        if (!PyLong_Check(field)) { PyErr_SetString(PyExc_TypeError, "required argument is not an integer"); return -1; }
        *out = PyLong_AsLongLong(field);
        if (*out == -1 && PyErr_Occurred()) return -1;
        if (*out < low || *out > high) { PyErr_SetString(PyExc_OverflowError, "field out of range"); return -1; }
        return 0;
    }
    static void groupcoord_put_be(unsigned char *at, unsigned long long value, int size) {
        for (int i = size - 1; i >= 0; i--) { at[i] = (unsigned char)(value & 0xFF); value >>= 8; }
    }
    static PyObject *groupcoord_value_v3_empty(int version, PyObject *offset, PyObject *leader_epoch,
                                               int metadata_length, PyObject *commit_timestamp) {
        long long fields[3];
        PyObject *value;
        unsigned char *at;
        if (groupcoord_long_in(offset, LLONG_MIN, LLONG_MAX, &fields[0]) < 0
                || groupcoord_long_in(leader_epoch, INT_MIN, INT_MAX, &fields[1]) < 0
                || groupcoord_long_in(commit_timestamp, LLONG_MIN, LLONG_MAX, &fields[2]) < 0) return NULL;
        value = PyBytes_FromStringAndSize(NULL, 24);
        if (value == NULL) return NULL;
        at = (unsigned char *)PyBytes_AS_STRING(value);
        groupcoord_put_be(at, (unsigned long long)(unsigned short)version, 2);
        groupcoord_put_be(at + 2, (unsigned long long)fields[0], 8);
        groupcoord_put_be(at + 10, (unsigned long long)(unsigned int)(int)fields[1], 4);
        groupcoord_put_be(at + 14, (unsigned long long)(unsigned short)metadata_length, 2);
        groupcoord_put_be(at + 16, (unsigned long long)fields[2], 8);
        return value;
    }
    """
    bytes _pack_value_v3_empty "groupcoord_value_v3_empty"(short version, object offset, object leader_epoch,
                                                            short metadata_length, object commit_timestamp)


# A request partition's four fields, as a tuple in offset_commit_run's order (compiled build only: the
# pure build reads the fields inline). Where the class keeps a field in a plain slot, found the way
# attribute lookup finds it (a member descriptor in the MRO, generic getattr), the slot is read
# directly: that is all the lookup would do. Anything else (no slot, an unset one, a property, __getattr__, a class
# changed since) is looked up as an attribute, raising what the lookup raises. The slot offsets are kept
# per class and version tag (CPython bumps the tag when a class or a base changes), as the interpreter's
# own attribute caches do.
cdef extern from *:
    """
    #include "structmember.h"
    typedef struct { PyTypeObject *type; unsigned int version_tag; Py_ssize_t at[4]; } groupcoord_slot_cache;
    static groupcoord_slot_cache groupcoord_partition_slots;
    static PyObject *groupcoord_partition_names[4];
    static PyObject *groupcoord_partition_tuple;

    static Py_ssize_t groupcoord_slot_at(PyTypeObject *type, PyObject *name) {
        PyObject *descr = _PyType_Lookup(type, name);
        PyMemberDef *member;
        if (descr == NULL || Py_TYPE(descr) != &PyMemberDescr_Type) return 0;
        member = ((PyMemberDescrObject *)descr)->d_member;
        if (member->type != T_OBJECT_EX || (member->flags & PY_AUDIT_READ)) return 0;
        return member->offset;
    }

    static PyObject *groupcoord_partition_fields(PyObject *p) {
        static const char *names[4] = {"partition_index", "committed_offset", "committed_leader_epoch",
                                       "committed_metadata"};
        groupcoord_slot_cache *cache = &groupcoord_partition_slots;
        PyTypeObject *type = Py_TYPE(p);
        PyObject *fields, *value;
        int i, j;
        if (groupcoord_partition_names[3] == NULL) {
            for (i = 0; i < 4; i++) {
                if (groupcoord_partition_names[i] == NULL) {
                    groupcoord_partition_names[i] = PyUnicode_InternFromString(names[i]);
                    if (groupcoord_partition_names[i] == NULL) return NULL;
                }
            }
        }
        if (type != cache->type || type->tp_version_tag != cache->version_tag) {
            cache->type = NULL;
            for (i = 0; i < 4; i++) {
                cache->at[i] = type->tp_getattro == PyObject_GenericGetAttr
                    ? groupcoord_slot_at(type, groupcoord_partition_names[i]) : 0;
            }
            if (type->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) {  /* _PyType_Lookup assigns one if it can */
                cache->type = type;
                cache->version_tag = type->tp_version_tag;
            }
        }
        fields = groupcoord_partition_tuple;
        if (fields != NULL && Py_REFCNT(fields) == 1) {  /* nobody else holds the last one: reuse it, as zip does */
            Py_INCREF(fields);
        } else {
            fields = PyTuple_New(4);
            if (fields == NULL) return NULL;
            for (i = 0; i < 4; i++) {
                Py_INCREF(Py_None);
                PyTuple_SET_ITEM(fields, i, Py_None);
            }
            Py_XSETREF(groupcoord_partition_tuple, fields);
            Py_INCREF(fields);
        }
        for (i = 0; i < 4; i++) {
            value = cache->at[i] ? *(PyObject **)((char *)p + cache->at[i]) : NULL;
            if (value != NULL) {
                Py_INCREF(value);
            } else {
                value = PyObject_GetAttr(p, groupcoord_partition_names[i]);
                if (value == NULL) {
                    Py_DECREF(fields);
                    return NULL;
                }
                if (cache->type != type || type->tp_version_tag != cache->version_tag) {
                    for (j = i + 1; j < 4; j++) cache->at[j] = 0;  /* that lookup ran code that changed the class */
                }
            }
            Py_SETREF(((PyTupleObject *)fields)->ob_item[i], value);
        }
        return fields;
    }
    """
    tuple _partition_fields "groupcoord_partition_fields"(object p)


# The stored form of a committed offset, one per partition of every commit: an extension type, so that
# offset_commit_run allocates it without a class call and sets its fields as struct members. The fields
# stay Python objects, so the class takes and keeps whatever the pure one does (no C range checks).
# Cython makes offsets.py's dataclass of it (eq, hash, repr, fields(), replace() as before).
cdef class OffsetAndMetadata:
    cdef public object offset
    cdef public object leader_epoch
    cdef public object metadata
    cdef public object commit_timestamp_ms
    cdef public object expire_timestamp_ms


# offsets.py binds `_new_offset` to object.__new__ for the pure build.
cdef inline OffsetAndMetadata _new_offset(cls):
    return OffsetAndMetadata.__new__(OffsetAndMetadata)


@cython.locals(indexes=list, offsets=list, keys=list, values=list, stored_under=list, cached=dict,
               stored=OffsetAndMetadata, known=tuple, compiled=cython.bint)
cpdef object offset_commit_run(group_id, topic, partitions, commit_timestamp)
