"""Benchmark: the Spark jobs and stages each view's write of the group-history report starts.

    python -m tests.bench.spark_view_jobs [--records 1000000] [--master local[2]] [--dir PATH]

Runs the report in this process over the log `tests.bench.spark_report` generates (and reuses) and
counts, with Spark's status tracker, the jobs and stages run while each view is written. A job's
fixed cost (planning, scheduling, committing files) is most of a small view's time, and the counts
do not depend on the machine's load, unlike its wall time.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from pyspark.sql import DataFrame

from spark_jobs import group_history
from spark_jobs.reader import local_session
from tests.bench.spark_report import ensure_log


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args(argv)
    directory = args.dir or Path(tempfile.gettempdir()) / f"groupcoord-bench-{args.records}"
    ensure_log(directory, args.records, args.seed)
    spark = local_session(args.master, app_name="bench-view-jobs")
    context = spark.sparkContext
    write_view = group_history.write_view

    def write_in_group(view: DataFrame, path: Path) -> None:
        context.setJobGroup(path.name, path.name)  # per thread: the views are written four at a time
        write_view(view, path)

    group_history.write_view = write_in_group  # type: ignore[assignment]
    try:
        with tempfile.TemporaryDirectory() as out:
            group_history.build_report(spark, directory, out, html=False)
        tracker = context.statusTracker()
        counts: dict[str, dict[str, int]] = {}
        for name in group_history.VIEWS:
            jobs = tracker.getJobIdsForGroup(name)
            stages = {stage for job in jobs if (info := tracker.getJobInfo(job)) for stage in info.stageIds}
            counts[name] = {"jobs": len(jobs), "stages": len(stages)}
    finally:
        group_history.write_view = write_view
        spark.stop()
    total = {"jobs": sum(c["jobs"] for c in counts.values()), "stages": sum(c["stages"] for c in counts.values())}
    print(json.dumps({"records": args.records, "master": args.master, "views": counts, "total": total}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
