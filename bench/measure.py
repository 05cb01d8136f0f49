#!/usr/bin/env python3
"""Runs a command a few times; reports its best wall time, its peak RSS and its exit codes.

    bench/measure.py [--label NAME] [--runs N] [--budget-s S] [--stdout FILE] [--ok-rc 0,1] -- CMD [ARG...]

Prints shell assignments on stdout, for `eval` in a bench script:

    best_s=1.234567 runs=3 peak_rss_kib=21800 rc=0

best_s is the fastest run (wall clock). peak_rss_kib is the largest resident set size of the
command itself over all runs (ru_maxrss of that child, from wait4, in KiB on Linux; the same
figure getrusage(RUSAGE_CHILDREN) would give when this helper runs nothing else). rc is 0 when
every run exited with a code in --ok-rc, else the first code that was not (negative = signal).

The command's stdout goes to --stdout (default: a file that is overwritten each run; not
/dev/null, because some tools stop at the first match when they see /dev/null). stderr is
passed through. Runs stop early, after at least one, when they have used --budget-s seconds.
"""

import argparse
import os
import subprocess
import sys
import time


def run_once(cmd, stdout_path):
    with open(stdout_path, "wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return elapsed, usage.ru_maxrss, proc.returncode


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--label", default=None, help="name used in the timing line on stderr")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--budget-s", type=float, default=float("inf"))
    ap.add_argument("--stdout", default=None)
    ap.add_argument("--ok-rc", default="0", help="comma-separated exit codes that count as success")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.cmd[1:] if args.cmd and args.cmd[0] == "--" else args.cmd
    if not cmd:
        ap.error("no command")
    ok = {int(c) for c in args.ok_rc.split(",") if c}
    stdout_path = args.stdout or os.path.join(
        os.environ.get("TMPDIR", "/tmp"), "autoheal-measure.%d.out" % os.getpid())

    times, peak, rc = [], 0, 0
    spent = 0.0
    for _ in range(max(1, args.runs)):
        try:
            elapsed, maxrss, code = run_once(cmd, stdout_path)
        except OSError as e:
            print("measure: cannot run %s: %s" % (cmd[0], e), file=sys.stderr)
            print("best_s=0 runs=0 peak_rss_kib=0 rc=127")
            return 0
        times.append(elapsed)
        peak = max(peak, maxrss)
        if code not in ok and rc == 0:
            rc = code if code != 0 else 1
        spent += elapsed
        if spent >= args.budget_s:
            break
    if args.stdout is None:
        os.unlink(stdout_path)
    print("best_s=%.6f runs=%d peak_rss_kib=%d rc=%d" % (min(times), len(times), peak, rc))
    print("measure: %s: runs %s s" % (args.label or os.path.basename(cmd[0]),
                                      " ".join("%.3f" % t for t in times)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
