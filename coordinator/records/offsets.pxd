# Typed declarations Cython reads beside offsets.py when it builds the accelerator
# (protocol/accel_build.py); the pure-Python source stays the reference (tests/core/test_offset_commit_runs.py
# runs both builds against offset_commit_record). The manifest's CRC covers this file too.
#
# offset_commit_run is a commit's per-partition loop: its columns are lists and its key cache a dict,
# so each append and cache lookup is a C call rather than a method lookup and call.

import cython


@cython.locals(indexes=list, offsets=list, keys=list, values=list, cached=dict)
cpdef object offset_commit_run(group_id, topic, partitions, commit_timestamp)
