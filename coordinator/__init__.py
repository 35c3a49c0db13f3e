"""groupcoord's server, store, records and core.

Importing protocol first installs the compiled accelerator's finder (protocol/accel.py), so the
compiled builds of coordinator's hot modules (log.batch, records, the server's request path) are
found before their pure sources.
"""

import protocol  # noqa: F401
