#!/usr/bin/env python3
"""Score `autoheal classify` on a labelled JSON-lines set (shared/data/dev_logs*.jsonl format).

usage: scripts/score_classify.py [--autoheal PATH] [--rules DIR] [--misses] FILE.jsonl...

Each record's `excerpt` is classified with `autoheal classify --json`; printed per file:
  cause    the cause equals the label
  plan     the plan (actions in catalog order) equals the label's actions
  requeue  the requeue answer equals the label
  culprit  over records whose label names a culprit: every field the label names (node, gpu,
           rank) is the one classify names (a GPU as a PCI id compares by domain/bus/device;
           a label that names a GPU by index compares with classify's gpu_index)
--misses prints every record that differs, with the rule that decided it.
"""
import argparse
import json
import re
import subprocess
import sys

PLAN_ORDER = ["none", "drain", "reset_gpu", "reboot", "rma_ticket", "network_ticket", "notify"]


def norm_plan(actions):
    seen = [a for a in PLAN_ORDER if a in actions]
    return [a for a in seen if a != "none"]


def pci_key(text):
    """(domain, bus, device) of a PCI id as printed (0000:3b:00, 00000000:3B:00.0, 3b:00.0)."""
    m = re.search(r"(?:([0-9a-fA-F]{4,8}):)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})(?:\.[0-7])?", text)
    if not m:
        return None
    return (int(m.group(1) or "0", 16), int(m.group(2), 16), int(m.group(3), 16))


def gpu_matches(label, got):
    if label is None:
        return True
    label = str(label)
    index = re.fullmatch(r"(?:device |GPU ?)?(\d+)", label.strip())
    if index:
        return got.get("gpu_index") is not None and int(got["gpu_index"]) == int(index.group(1))
    # A GPU named by its UUID ("GPU-3b6ec030-...") is the same GPU only by the same UUID.
    if re.fullmatch(r"GPU-[0-9a-fA-F-]+", label.strip()):
        return label.strip().lower() == (got.get("gpu") or "").strip().lower()
    want = pci_key(label)
    have = pci_key(got.get("gpu") or "")
    return want is not None and want == have


def culprit_matches(label, got):
    got = got or {}
    if label.get("node") is not None and label["node"] != got.get("node"):
        return False
    # A rank is a number whether the label wrote it as one or as text ("12").
    if label.get("rank") is not None and str(label["rank"]) != str(got.get("rank")):
        return False
    return gpu_matches(label.get("gpu"), got)


def classify(binary, rules, excerpt):
    cmd = [binary, "classify", "--json"] + (["--rules", rules] if rules else []) + ["-"]
    out = subprocess.run(cmd, input=excerpt.encode(), capture_output=True, check=True)
    return json.loads(out.stdout)


def score(path, args):
    n = cause = plan = requeue = culprit_n = culprit_ok = 0
    misses = []
    with open(path) as f:
        records = [json.loads(line) for line in f if line.strip()]
    for r in records:
        d = classify(args.autoheal, args.rules, r["excerpt"])
        n += 1
        ok_cause = d["cause"] == r["cause"]
        ok_plan = norm_plan(d["actions"]) == norm_plan(r["actions"])
        ok_requeue = d["requeue"] == r["requeue"]
        cause += ok_cause
        plan += ok_plan
        requeue += ok_requeue
        ok_culprit = True
        if r.get("culprit"):
            culprit_n += 1
            ok_culprit = culprit_matches(r["culprit"], d.get("culprit"))
            culprit_ok += ok_culprit
        if not (ok_cause and ok_plan and ok_requeue and ok_culprit):
            misses.append((r, d, ok_cause, ok_plan, ok_requeue, ok_culprit))
    pct = lambda a, b: f"{a}/{b} ({100.0 * a / b:.1f}%)" if b else "-"
    print(f"{path}: cause {pct(cause, n)}  plan {pct(plan, n)}  requeue {pct(requeue, n)}"
          f"  culprit {pct(culprit_ok, culprit_n)}")
    if args.misses:
        for r, d, oc, op, oq, ou in misses:
            what = ",".join(w for w, ok in (("cause", oc), ("plan", op), ("requeue", oq),
                                            ("culprit", ou)) if not ok)
            print(f"  {r['id']} [{what}] want {r['cause']} {norm_plan(r['actions'])} "
                  f"requeue={r['requeue']} culprit={r.get('culprit')}; got {d['cause']} "
                  f"{d['actions']} requeue={d['requeue']} culprit={d.get('culprit')} "
                  f"rule={d.get('rule')} conf={d.get('confidence')}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--autoheal", default="build/bin/autoheal")
    p.add_argument("--rules", default="etc/rules.d")
    p.add_argument("--misses", action="store_true")
    p.add_argument("files", nargs="+")
    args = p.parse_args()
    for path in args.files:
        score(path, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
