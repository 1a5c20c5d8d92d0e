#!/usr/bin/env python3
"""The encoder step of `gpu_bench encoder-step`, written plainly in PyTorch-Python: the baseline it is timed
against on the same GPU. A post-LayerNorm BERT-style encoder (word + position + token-type embeddings,
LayerNorm, nn.TransformerEncoderLayer with GELU), mean pooling over the tokens, L2-normalised query and label
embeddings, in-batch decoupled softmax (each query's own label is its positive, temperature 0.05), AdamW with
fp32 master weights, the forward under bf16 autocast. Prints one JSON line like gpu_bench's.

  python3 bench/gpu/encoder_step_reference.py --batch 512 [--device cuda] [--layers 6 --hidden 768 --heads 12]
"""
import argparse
import json
import time

import torch
import torch.nn.functional as F


class Encoder(torch.nn.Module):
    def __init__(self, vocab, hidden, layers, heads, max_len):
        super().__init__()
        self.word = torch.nn.Embedding(vocab, hidden, padding_idx=0)
        self.position = torch.nn.Embedding(512, hidden)
        self.token_type = torch.nn.Embedding(2, hidden)
        self.norm = torch.nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = torch.nn.Dropout(0.1)
        layer = torch.nn.TransformerEncoderLayer(hidden, heads, 4 * hidden, dropout=0.1, activation="gelu",
                                                 layer_norm_eps=1e-12, batch_first=True, norm_first=False)
        self.layers = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.register_buffer("positions", torch.arange(max_len), persistent=False)

    def forward(self, ids):
        x = self.word(ids) + self.position(self.positions[: ids.size(1)]) + self.token_type(torch.zeros_like(ids))
        x = self.layers(self.dropout(self.norm(x)))
        return x.mean(dim=1)  # every text has exactly max_len tokens: no padding to mask


def decoupled_softmax(scores, temperature=0.05):
    logits = scores.float() / temperature
    eye = torch.eye(scores.size(0), dtype=torch.bool, device=scores.device)
    negatives = logits.masked_fill(eye, float("-inf")).logsumexp(dim=1)
    positive = logits.diagonal()
    return (torch.logaddexp(positive, negatives) - positive).mean()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--batch", type=int, default=512)
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--max-len", type=int, default=32)
    p.add_argument("--precision", choices=["bf16", "fp32"], default="bf16")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--trace", help="write a Chrome trace of three more steps here (bench/gpu/trace_summary.py reads it)")
    args = p.parse_args()
    device = torch.device(args.device)
    torch.manual_seed(1)
    model = Encoder(30522, args.hidden, args.layers, args.heads, args.max_len).to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    queries = torch.randint(1000, 30000, (args.batch, args.max_len), device=device)
    labels = torch.randint(1000, 30000, (args.batch, args.max_len), device=device)
    queries[:, 0], queries[:, -1], labels[:, 0], labels[:, -1] = 101, 102, 101, 102

    def step():
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=args.precision == "bf16"):
            q = model(queries)
            l = model(labels)
        q, l = F.normalize(q.float(), dim=1), F.normalize(l.float(), dim=1)
        decoupled_softmax(q @ l.t()).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    for _ in range(args.warmup):
        step()
    sync()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        step()
    sync()
    per_step = (time.perf_counter() - t0) / args.steps
    if args.trace:
        activities = [torch.profiler.ProfilerActivity.CPU]
        if device.type == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        with torch.profiler.profile(activities=activities) as profile:
            for _ in range(3):
                step()
            sync()
        profile.export_chrome_trace(args.trace)
    print(json.dumps({"bench": "encoder_step_pytorch", "device": args.device, "batch": args.batch, "layers": args.layers,
                      "hidden": args.hidden, "max_len": args.max_len, "precision": args.precision,
                      "step_s": round(per_step, 5), "queries_per_s": round(args.batch / per_step, 1)}))


if __name__ == "__main__":
    main()
