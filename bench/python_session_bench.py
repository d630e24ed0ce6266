#!/usr/bin/env python3
"""Times weir.load(MODEL).run() from Python the way `graph-runner bench` times the same model.

    python_session_bench.py MODEL INPUT.npy OUT.npy [ITERATIONS] [WARMUP]

Feeds INPUT.npy to the model's one input, writes the first output to OUT.npy, and prints
"python p50_ms=... mean_ms=... min_ms=..." over ITERATIONS (default 50) timed runs after WARMUP (5).
"""

import sys
import time

import numpy as np

import weir


def main():
    model, input_path, output_path = sys.argv[1:4]
    iterations = int(sys.argv[4]) if len(sys.argv) > 4 else 50
    warmup = int(sys.argv[5]) if len(sys.argv) > 5 else 5
    session = weir.load(model, opt_level=3)
    feeds = {session.input_names[0]: np.load(input_path)}
    for _ in range(warmup):
        outputs = session.run(feeds)
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        outputs = session.run(feeds)
        times.append((time.perf_counter() - start) * 1e3)
    np.save(output_path, outputs[session.output_names[0]])
    print(f"python p50_ms={np.median(times):.3f} mean_ms={np.mean(times):.3f} min_ms={np.min(times):.3f}")


if __name__ == "__main__":
    main()
