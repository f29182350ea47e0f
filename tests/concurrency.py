"""Work started at the same instant in real threads, each on its own database connection."""

import threading
from collections.abc import Callable, Sequence

from django.db import connections


def all_at_once(targets: Sequence[Callable[[], object]], *, timeout: float = 60) -> list:
    """Run each of ``targets`` in a thread of its own, released together; their results, in order."""
    barrier = threading.Barrier(len(targets))
    results: list = [None] * len(targets)

    def run(index: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[index] = targets[index]()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(targets))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    return results
