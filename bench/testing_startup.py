"""Time to a ready kubelite server for tests: in-process (a thread of this process) against a
``kubelite serve`` subprocess, each started on a fresh data dir and stopped, ``--runs`` times.

Ready means a client's first request (GET /api/v1/namespaces/default) answered over HTTPS. The
first in-process start also pays for importing the server, which a test session pays once.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    started = time.perf_counter()
    from kubelite.testing.servers import MODES, start_server

    print(f"import kubelite.testing: {(time.perf_counter() - started) * 1000:.0f} ms")
    with tempfile.TemporaryDirectory() as tmp:
        for mode in MODES:
            times = []
            for run in range(args.runs):
                t0 = time.perf_counter()
                server = start_server(Path(tmp) / f"{mode}-{run}" / "data", mode)
                with server.client() as client:
                    client.get("v1", "Namespace", "default")
                times.append(time.perf_counter() - t0)
                t1 = time.perf_counter()
                server.stop()
                stop = time.perf_counter() - t1
            shown = ", ".join(f"{t * 1000:.0f}" for t in times)
            print(
                f"{mode:>10}: ready median {statistics.median(times) * 1000:.0f} ms "
                f"(min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f}; runs: {shown} ms); "
                f"last stop {stop * 1000:.0f} ms"
            )


if __name__ == "__main__":
    main()
