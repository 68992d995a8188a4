"""Process CPU time for per-CPU-second benchmarks, with or without the processes this one started.

An engine that runs in a server process (vLLM's ``vllm serve``) does its work outside this process, so its cost
is this process's CPU time plus that of every process below it; an in-process engine's is this process's alone
(an idle server beside it would otherwise be charged to it).
"""

from __future__ import annotations

import psutil


def cpu_seconds(*, descendants: bool = False) -> float:
    """User + system CPU seconds of this process so far, and of every live process below it if ``descendants``."""
    me = psutil.Process()
    processes = [me, *me.children(recursive=True)] if descendants else [me]
    total = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total
