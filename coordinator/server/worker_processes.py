"""Forked worker processes for CPU-bound work that would otherwise hold the event loop (and the GIL).

Two users: the KIP-1263 assignor runs (assignment_pool.py) and the parallel load of the
`__consumer_offsets` partitions at start (log_record_store.py). Forking, not spawning: a worker
inherits the imported modules (and any fds open at fork time) and is ready in milliseconds.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import ProcessPoolExecutor

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def forked_pool(workers: int) -> ProcessPoolExecutor:
    """A pool whose workers end with the process that made it (see `_exit_with_parent`)."""
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"),
                               initializer=_exit_with_parent, initargs=(os.getpid(),))


def die_with_parent(parent: int) -> bool:
    """Ask Linux to SIGKILL this process when its parent (pid `parent`) dies (prctl
    PR_SET_PDEATHSIG). False where that is unavailable (not Linux): nothing was armed. Run in the
    child: a pool worker's initializer, or a subprocess's preexec_fn (the tests start servers so)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)  # the process's own symbols, libc's among them
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):
        return False
    if os.getppid() != parent:  # died before the request took effect
        os._exit(1)
    return True


def _exit_with_parent(parent: int) -> None:
    """Worker initializer: a worker must not outlive a server killed with SIGKILL (nothing would
    ever end it: forked workers hold the job pipe's write end too, so they never see EOF). On Linux
    the kernel sends SIGKILL when the parent dies; elsewhere a thread polls for reparenting."""
    if die_with_parent(parent):
        return

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()
