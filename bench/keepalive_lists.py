"""Back-to-back LISTs on one keep-alive connection: median, p90 and max latency.

A client that reuses one connection (every client library does) sends the next request as soon
as the last chunk of the previous response arrives. This measured the ~40 ms stalls Nagle's
algorithm caused there until the listening socket got TCP_NODELAY (docs/benchmarks.md).

    .venv/bin/kubelite serve --port 0 --data-dir /tmp/kl &    # then create some ConfigMaps
    .venv/bin/python bench/keepalive_lists.py https://127.0.0.1:PORT "$(cat /tmp/kl/token)" \\
        /tmp/kl/ca.crt 200
"""

from __future__ import annotations

import http.client
import ssl
import statistics
import sys
import time


def main() -> None:
    url, token, ca, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    host, port = url.split("//")[1].rsplit(":", 1)
    conn = http.client.HTTPSConnection(
        host, int(port), context=ssl.create_default_context(cafile=ca)
    )
    headers = {"Authorization": f"Bearer {token}"}
    times = []
    for _ in range(count):
        start = time.perf_counter()
        conn.request("GET", "/api/v1/namespaces/default/configmaps?limit=50", headers=headers)
        conn.getresponse().read()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    p90 = times[int(len(times) * 0.9)]
    print(f"median {statistics.median(times):.1f} ms, p90 {p90:.1f} ms, max {times[-1]:.1f} ms")


if __name__ == "__main__":
    main()
