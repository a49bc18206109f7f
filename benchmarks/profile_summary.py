"""Summarise a ``py-spy record --threads -f raw`` profile: samples per thread, and the
functions with the most samples on top of the stack (self) and anywhere in it (total).

    py-spy record --threads -r 200 -f raw -o send.raw -p PID -d 10
    python benchmarks/profile_summary.py send.raw [--top 25] [--thread MainThread]
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

_LOCATION = re.compile(r"^(?P<func>.*?) \((?P<file>[^():]+)(?::\d+)?\)$")


def _short(frame: str) -> str:
    match = _LOCATION.match(frame)
    if not match:
        return frame
    path = match["file"]
    for marker in ("site-packages/", "src/", "lib/python3.11/"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{match['func']} ({path})"


def summarise(path: Path, top: int, only: str | None) -> str:
    threads: Counter[str] = Counter()
    self_time: Counter[str] = Counter()
    total_time: Counter[str] = Counter()
    samples = 0
    for line in path.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack:
            continue
        count = int(count_text)
        frames = stack.split(";")
        thread = frames[0]
        if only and only not in thread:
            continue
        threads[re.sub(r"\s*\(?0x[0-9a-f]+\)?", "", thread)] += count
        samples += count
        funcs = [_short(f) for f in frames[1:]]
        if funcs:
            self_time[funcs[-1]] += count
        for func in set(funcs):
            total_time[func] += count
    out = [f"{samples} samples"]
    out += [f"  {n / samples:6.1%}  {name}" for name, n in threads.most_common()]
    out.append("self:")
    out += [f"  {n / samples:6.1%}  {name}" for name, n in self_time.most_common(top)]
    out.append("total:")
    out += [f"  {n / samples:6.1%}  {name}" for name, n in total_time.most_common(top)]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("profile", type=Path)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--thread", help="only threads whose name contains this")
    args = parser.parse_args()
    print(summarise(args.profile, args.top, args.thread))


if __name__ == "__main__":
    main()
