"""groupcoord's Spark reports over `__consumer_offsets` logs.

Importing protocol first installs the compiled accelerator's finder (protocol/accel.py), so the
compiled builds of the reader's modules (spark_jobs.decode, summarize, rows) are found before their
pure sources, whichever of them a process imports first.
"""

import protocol  # noqa: F401
