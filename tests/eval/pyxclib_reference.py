#!/usr/bin/env python3
"""Checks `xmc eval --json` against an independent reference of pyxclib's metric definitions.

The reference below is written from the definitions (DESIGN.md section 4, pyxclib's xc_metrics.py) in
plain Python with dense per-row lists, sharing no code with the engine. Random truth/score/train/filter
files with ties, empty rows, rows with fewer predictions than k and filtered pairs are generated; every
metric must agree to 1e-6.
"""
import argparse
import json
import math
import random
import subprocess
import sys
import tempfile
from pathlib import Path


def write_sparse(path, rows, num_cols, fmt):
    with open(path, "w") as f:
        f.write(f"{len(rows)} {num_cols}\n")
        for row in rows:
            f.write(" ".join(f"{c}:{fmt(v)}" for c, v in row) + "\n")


def inverse_propensity(train_rows, num_labels, a, b):
    n = len(train_rows)
    freq = [0] * num_labels
    for row in train_rows:
        for label, _ in row:
            freq[label] += 1
    c = (math.log(n) - 1) * (b + 1) ** a
    return [1 + c * (f + b) ** (-a) for f in freq], freq


def top_k(pred_row, k, excluded):
    # Descending score, ties broken by the lower label index; filtered labels removed first.
    candidates = [(label, score) for label, score in pred_row if label not in excluded]
    candidates.sort(key=lambda x: (-x[1], x[0]))
    return [label for label, _ in candidates[:k]]


def reference_metrics(truth, preds, inv_p, freq, filters, ks, decile_k):
    n = len(truth)
    max_k = max(ks + [decile_k])
    out = {}
    sums = {f"{m}@{k}": 0.0 for k in ks for m in ("P", "nDCG", "R", "PSP", "PSPi", "PSnDCG", "PSnDCGi")}
    # Decile bins: labels by descending train frequency (ties: lower index), greedy tenths of positives.
    order = sorted(range(len(freq)), key=lambda l: (-freq[l], l))
    total = sum(freq)
    bins, before = [9] * len(freq), 0
    for label in order:
        bins[label] = min(9, int(before * 10 / total))
        before += freq[label]
    decile = [0.0] * 10
    for i in range(n):
        true = {label for label, _ in truth[i]}
        ranked = top_k(preds[i], max_k, filters.get(i, set()))
        hits = [1 if r < len(ranked) and ranked[r] in true else 0 for r in range(max_k)]
        ideal_w = sorted((inv_p[l] for l in true), reverse=True)
        for r in range(min(decile_k, len(ranked))):
            if hits[r]:
                decile[bins[ranked[r]]] += 1.0 / (decile_k * n)
        if not true:
            continue
        for k in ks:
            disc = [1 / math.log2(r + 2) for r in range(k)]
            z = sum(disc[: min(k, len(true))])
            sums[f"P@{k}"] += sum(hits[:k]) / k
            sums[f"nDCG@{k}"] += sum(h * d for h, d in zip(hits[:k], disc)) / z
            sums[f"R@{k}"] += sum(hits[:k]) / len(true)
            sums[f"PSP@{k}"] += sum(inv_p[ranked[r]] for r in range(k) if hits[r]) / k
            sums[f"PSPi@{k}"] += sum(ideal_w[:k]) / k
            sums[f"PSnDCG@{k}"] += sum(inv_p[ranked[r]] * disc[r] for r in range(k) if hits[r]) / z
            sums[f"PSnDCGi@{k}"] += sum(w * d for w, d in zip(ideal_w[:k], disc)) / z
    for k in ks:
        out[f"P@{k}"] = sums[f"P@{k}"] / n
        out[f"nDCG@{k}"] = sums[f"nDCG@{k}"] / n
        out[f"R@{k}"] = sums[f"R@{k}"] / n
        out[f"PSP@{k}"] = sums[f"PSP@{k}"] / sums[f"PSPi@{k}"]
        out[f"PSnDCG@{k}"] = sums[f"PSnDCG@{k}"] / sums[f"PSnDCGi@{k}"]
    return out, decile


def random_case(rng, n, num_labels, num_train):
    def labels(max_count):
        count = rng.randint(0, max_count)
        return sorted(set(rng.randrange(num_labels) for _ in range(count)))

    # A skewed label distribution, as in real XMC data.
    def skewed():
        return min(num_labels - 1, int(rng.paretovariate(1.2)) - 1)

    train = [[(l, 1.0) for l in sorted({skewed() for _ in range(rng.randint(1, 6))})] for _ in range(num_train)]
    truth = [[(l, 1.0) for l in (labels(6) if rng.random() > 0.1 else [])] for _ in range(n)]
    preds = []
    for i in range(n):
        count = rng.randint(0, 14)
        chosen = rng.sample(range(num_labels), count)
        # Some true labels among the predictions; scores on a coarse grid so ties happen often.
        for label, _ in truth[i]:
            if rng.random() < 0.5 and label not in chosen:
                chosen.append(label)
        preds.append(sorted((l, round(rng.random() * 10) / 10) for l in chosen))
    filters = {}
    for i in range(n):
        if preds[i] and rng.random() < 0.2:
            filters.setdefault(i, set()).add(rng.choice(preds[i])[0])
    return train, truth, preds, filters


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--xmc", required=True)
    parser.add_argument("--cases", type=int, default=5)
    args = parser.parse_args()
    failures = 0
    for case in range(args.cases):
        rng = random.Random(1000 + case)
        n, num_labels = rng.randint(50, 400), rng.randint(20, 300)
        a, b = rng.choice([(0.55, 1.5), (0.6, 2.6), (0.5, 0.4)])
        ks = [1, 3, 5, 10]
        train, truth, preds, filters = random_case(rng, n, num_labels, rng.randint(100, 500))
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            write_sparse(tmp / "trn.txt", train, num_labels, lambda v: "1")
            write_sparse(tmp / "tst.txt", truth, num_labels, lambda v: "1")
            write_sparse(tmp / "pred.txt", preds, num_labels, lambda v: repr(v))
            with open(tmp / "filter.txt", "w") as f:
                for row in sorted(filters):
                    for label in sorted(filters[row]):
                        f.write(f"{row} {label}\n")
            cmd = [args.xmc, "eval", "--truth", str(tmp / "tst.txt"), "--pred", str(tmp / "pred.txt"),
                   "--train", str(tmp / "trn.txt"), "--filter", str(tmp / "filter.txt"), "--A", str(a), "--B", str(b),
                   "--k", ",".join(map(str, ks)), "--deciles", "--json"]
            run = subprocess.run(cmd, capture_output=True, text=True)
            if run.returncode != 0:
                print(f"case {case}: xmc eval failed: {run.stderr}")
                failures += 1
                continue
            got = json.loads(run.stdout.strip().splitlines()[-1])
        inv_p, freq = inverse_propensity(train, num_labels, a, b)
        want, want_deciles = reference_metrics(truth, preds, inv_p, freq, filters, ks, 5)
        for key, value in want.items():
            if abs(got[key] - value) > 1e-6:
                print(f"case {case}: {key} = {got[key]!r}, reference {value!r}")
                failures += 1
        for i, (g, w) in enumerate(zip(got["deciles"]["P@5"], want_deciles)):
            if abs(g - w) > 1e-6:
                print(f"case {case}: decile {i + 1} = {g!r}, reference {w!r}")
                failures += 1
        print(f"case {case}: n={n} L={num_labels} A={a} B={b}: {len(want) + 10} values compared")
    print("all cases agree with the reference" if not failures else f"{failures} values disagree with the reference")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
