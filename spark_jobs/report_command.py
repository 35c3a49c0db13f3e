"""`groupcoord report`: the group-history Spark job from the command line.

Only argparse here: Spark (an optional extra, `pip install 'groupcoord[spark]'`) is imported when
the command runs, never by the server.
"""

from __future__ import annotations

import argparse
import sys

EXIT_FAILED = 1


def add_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    report = commands.add_parser("report", help="group history reports (Spark) from a coordinator log dir",
                                 description="Run spark_jobs/group_history.py over a data dir: Parquet "
                                             "tables, summary.json and report.html in --out.")
    report.add_argument("--log-dir", required=True, help="the server's log.dirs, or a copy of its segments")
    report.add_argument("--out", required=True, help="output directory")
    report.add_argument("--master", default=None, help="Spark master (default local[*])")
    report.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    try:
        from spark_jobs import group_history
    except ImportError as exc:
        print(f"groupcoord report: needs the spark extra (pip install 'groupcoord[spark]'): {exc}", file=sys.stderr)
        return EXIT_FAILED
    argv = ["--log-dir", args.log_dir, "--out", args.out] + (["--master", args.master] if args.master else [])
    return group_history.main(argv)
