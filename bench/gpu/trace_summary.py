#!/usr/bin/env python3
"""Where a profiled step's time goes, from a Chrome trace of `gpu_bench --trace` or a torch.profiler export.

Prints, per trace: the span from the first to the last GPU kernel, how much of it the GPU was busy (the union
of kernel intervals: a low share means the host does not launch fast enough), the kernels launched, and GPU
time by kind of kernel (matrix products, attention, normalisation, element-wise, reductions, optimiser,
copies) and by the 15 costliest kernel names.

  bench/gpu/trace_summary.py TRACE.json [TRACE.json ...]
"""
import json
import re
import sys
from collections import defaultdict

KINDS = [  # first match wins
    ("matrix products", r"gemm|cutlass|sm90_xmma|sm80_xmma|cublas|nvjet|matmul"),
    ("attention", r"flash|fmha|attention|efficient"),
    ("normalisation", r"layer_norm|LayerNorm|rms_norm|norm_kernel"),
    ("optimiser", r"multi_tensor|adam|Adam|fused_adam"),
    ("reductions", r"reduce|Reduce|softmax|Softmax|logsumexp|sum_kernel"),
    ("embedding", r"embedding|index_select|indexSelect|index_put|scatter|gather|Embedding"),
    ("dropout", r"dropout|fused_dropout|philox|bernoulli"),
    ("copies", r"copy|Copy|cat|Cat|memcpy|Memcpy|memset|Memset"),
    ("element-wise", r"elementwise|vectorized|unrolled|Functor|gelu|GeLU"),
]


def kind_of(name):
    for kind, pattern in KINDS:
        if re.search(pattern, name):
            return kind
    return "other"


def summarise(path):
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    kernels = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    if not kernels:
        print(f"{path}: no GPU kernels in the trace")
        return
    kernels.sort(key=lambda e: e["ts"])
    start, end = kernels[0]["ts"], max(e["ts"] + e["dur"] for e in kernels)
    busy, cursor = 0.0, start
    for e in kernels:
        s, t = max(e["ts"], cursor), e["ts"] + e["dur"]
        if t > s:
            busy += t - s
            cursor = t
    by_kind, by_name, count = defaultdict(float), defaultdict(lambda: [0.0, 0]), defaultdict(int)
    for e in kernels:
        by_kind[kind_of(e["name"])] += e["dur"]
        by_name[e["name"]][0] += e["dur"]
        by_name[e["name"]][1] += 1
    launches = sum(1 for e in events if e.get("ph") == "X" and e.get("name") in ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx"))
    total = sum(by_kind.values())
    print(f"== {path}")
    print(f"span {(end - start) / 1e3:.2f} ms, GPU busy {busy / 1e3:.2f} ms ({100 * busy / (end - start):.0f} %), "
          f"{len(kernels)} kernels, {launches} launches from the host")
    for kind, us in sorted(by_kind.items(), key=lambda kv: -kv[1]):
        print(f"  {kind:16s} {us / 1e3:9.2f} ms {100 * us / total:5.1f} %")
    print("  costliest kernels:")
    for name, (us, n) in sorted(by_name.items(), key=lambda kv: -kv[1][0])[:15]:
        print(f"    {us / 1e3:8.2f} ms {n:5d}×  {name[:110]}")


if __name__ == "__main__":
    for p in sys.argv[1:]:
        summarise(p)
