"""Cut generated logs into several segments, as rolls of the server's log would have."""

from __future__ import annotations

import os
from pathlib import Path

from coordinator.log.segment import scan_batches, segment_name
from spark_jobs.decode import find_segments


def split_segments(log_dir: Path, pieces: int) -> None:
    """Split each partition's one segment into ``pieces`` segments at evenly spaced batches."""
    for segment in find_segments(log_dir):
        fd = os.open(segment, os.O_RDONLY)
        try:
            batches = [(pos, header.base_offset) for pos, header, _ in scan_batches(fd, os.fstat(fd).st_size)]
        finally:
            os.close(fd)
        data = segment.read_bytes()
        cuts = [batches[i * len(batches) // pieces] for i in range(1, pieces)]
        segment.write_bytes(data[:cuts[0][0]])
        for (start, base), (end, _) in zip(cuts, [*cuts[1:], (len(data), None)]):
            (segment.parent / segment_name(base)).write_bytes(data[start:end])
