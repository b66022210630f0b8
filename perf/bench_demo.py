"""Time the main job, ``hoibench demo``, end to end in a fresh process (target: < 3 minutes on
2 CPU cores).

    python perf/bench_demo.py

Runs ``hoibench demo --out <tmp>`` as a user would and prints the wall time next to the
per-stage timings the demo records in ``demo.json``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "demo"
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "hoibench", "demo", "--out", str(out), "--quiet"],
                       check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        timings = json.loads((out / "demo.json").read_text())["timings"]
    print(f"hoibench demo, fresh process: {wall:.1f} s wall (target < 180 s; "
          f"{180 / wall:.0f}x under the target)")
    for stage, seconds in timings.items():
        print(f"  {stage:<45} {seconds:7.2f} s")


if __name__ == "__main__":
    main()
