"""py-spy sampling of the web workers while a scenario runs (``make bench ARGS="--profile token"``)."""

from __future__ import annotations

import collections
import contextlib
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

PROJECT_DIRS = ("config/", "partners/", "catalog/", "quotes/", "orders/", "payouts/", "bench/")


def py_spy() -> str:
    path = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(path).exists():
        raise SystemExit("py-spy is not installed: `make install` installs the dev extras")
    return path


@contextlib.contextmanager
def record(pids: list[int], out: Path, *, duration: float, gil: bool = False) -> Iterator[None]:
    """Sample each pid (100 Hz, native threads idle excluded) into collapsed stacks, merged into ``out``."""
    procs = []
    parts = []
    for pid in pids:
        part = out.with_suffix(f".{pid}.txt")
        parts.append(part)
        procs.append(
            subprocess.Popen(
                [
                    py_spy(),
                    "record",
                    "--pid",
                    str(pid),
                    "--duration",
                    str(int(duration)),
                    "--rate",
                    "100",
                    "--format",
                    "raw",
                    "--output",
                    str(part),
                    "--nonblocking",
                    *(["--gil"] if gil else []),
                ],  # fmt: skip
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
    try:
        yield
    finally:
        for proc in procs:
            proc.wait(timeout=duration + 60)
        with out.open("w") as merged:
            for part in parts:
                if part.exists():
                    merged.write(part.read_text())
                    part.unlink()


def _function(frame: str) -> str:
    # py-spy raw frames look like "function (path/to/file.py:123)"
    name, _, where = frame.partition(" (")
    where = where.rstrip(")")
    path = where.rsplit(":", 1)[0]
    for marker in ("site-packages/", "lib/python3.11/"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    else:
        for d in PROJECT_DIRS:
            if f"/{d}" in path:
                path = d + path.split(f"/{d}", 1)[1]
                break
    return f"{path}:{name}"


def summarise(path: Path, top: int = 40) -> str:
    """Inclusive share of samples per function, busiest first (idle waiting excluded by py-spy)."""
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = [_function(f) for f in stack.split(";") if "(" in f]
        if not frames:
            continue
        total += n
        for fn in set(frames):
            inclusive[fn] += n
        own[frames[-1]] += n
    lines = [f"{total} samples (busy threads only)", "inclusive  own     function"]
    for fn, n in inclusive.most_common(top):
        lines.append(f"{100 * n / total:6.1f}%  {100 * own[fn] / total:5.1f}%  {fn}")
    lines.append("")
    lines.append("hottest own time:")
    for fn, n in own.most_common(15):
        lines.append(f"{100 * n / total:6.1f}%  {fn}")
    return "\n".join(lines)
