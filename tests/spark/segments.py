"""Generated logs, whole and cut into several segments as rolls of the server's log would have."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from coordinator.log.segment import scan_batches, segment_name
from spark_jobs.decode import find_segments
from spark_jobs.generate import generate


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
        for (start, base), (end, _) in zip(cuts, [*cuts[1:], (len(data), None)], strict=True):
            (segment.parent / segment_name(base)).write_bytes(data[start:end])


def whole_and_cut(directory: Path, records: int, groups: int, partitions: int, seed: int,
                  pieces: int) -> tuple[Path, Path]:
    """A generated log in ``directory``/whole, and the same records cut into ``pieces`` segments per
    partition in ``directory``/cut."""
    whole, cut = directory / "whole", directory / "cut"
    generate(whole, records, groups=groups, partitions=partitions, seed=seed)
    shutil.copytree(whole, cut)
    split_segments(cut, pieces)
    return whole, cut
