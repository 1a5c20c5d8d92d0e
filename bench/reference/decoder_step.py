#!/usr/bin/python3
"""The decoder-encoder training step of bench/decoder_step.cpp in plain PyTorch, as a user would write it from
Hugging Face's Qwen2 modelling code and PEFT's LoRA layer: the same shapes, the same arithmetic (RMSNorm in
float32, rotary positions, grouped-query attention, SwiGLU, mean pooling; LoRA on every projection with the
base frozen; AdamW on the adapters). Needs Debian's python3-torch; for benches only. Prints one JSON line.
"""
import argparse
import json
import math
import resource
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class LoraLinear(nn.Module):
    def __init__(self, d_in, d_out, bias, rank, alpha):
        super().__init__()
        self.base = nn.Linear(d_in, d_out, bias=bias)
        self.base.weight.requires_grad_(False)
        if bias:
            self.base.bias.requires_grad_(False)
        self.rank = rank
        if rank > 0:
            self.lora_A = nn.Linear(d_in, rank, bias=False)
            self.lora_B = nn.Linear(rank, d_out, bias=False)
            nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
            nn.init.zeros_(self.lora_B.weight)
            self.scaling = alpha / math.sqrt(rank)

    def forward(self, x):
        y = self.base(x)
        if self.rank > 0:
            y = y + self.lora_B(self.lora_A(x)) * self.scaling
        return y


class RMSNorm(nn.Module):
    def __init__(self, size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size), requires_grad=False)
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Layer(nn.Module):
    def __init__(self, a):
        super().__init__()
        h, hd = a.hidden, a.hidden // a.heads
        self.heads, self.kv, self.hd = a.heads, a.kv_heads, hd
        self.input_layernorm = RMSNorm(h)
        self.post_attention_layernorm = RMSNorm(h)
        self.q_proj = LoraLinear(h, a.heads * hd, True, a.rank, a.alpha)
        self.k_proj = LoraLinear(h, a.kv_heads * hd, True, a.rank, a.alpha)
        self.v_proj = LoraLinear(h, a.kv_heads * hd, True, a.rank, a.alpha)
        self.o_proj = LoraLinear(a.heads * hd, h, False, a.rank, a.alpha)
        self.gate_proj = LoraLinear(h, a.intermediate, False, a.rank, a.alpha)
        self.up_proj = LoraLinear(h, a.intermediate, False, a.rank, a.alpha)
        self.down_proj = LoraLinear(a.intermediate, h, False, a.rank, a.alpha)

    def forward(self, x, cos, sin, mask):
        B, L, _ = x.shape
        n = self.input_layernorm(x)
        q = self.q_proj(n).view(B, L, self.heads, self.hd).transpose(1, 2)
        k = self.k_proj(n).view(B, L, self.kv, self.hd).transpose(1, 2)
        v = self.v_proj(n).view(B, L, self.kv, self.hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        group = self.heads // self.kv
        k = k[:, :, None].expand(B, self.kv, group, L, self.hd).reshape(B, self.heads, L, self.hd)
        v = v[:, :, None].expand(B, self.kv, group, L, self.hd).reshape(B, self.heads, L, self.hd)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.hd) + mask
        attended = (torch.softmax(scores.float(), dim=-1).to(q.dtype) @ v).transpose(1, 2).reshape(B, L, -1)
        h = x + self.o_proj(attended)
        m = self.post_attention_layernorm(h)
        return h + self.down_proj(F.silu(self.gate_proj(m)) * self.up_proj(m))


class Decoder(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.embed_tokens = nn.Embedding(a.vocab, a.hidden)
        self.embed_tokens.weight.requires_grad_(False)
        self.layers = nn.ModuleList(Layer(a) for _ in range(a.layers))
        self.norm = RMSNorm(a.hidden)
        self.hd, self.theta = a.hidden // a.heads, 1e6

    def forward(self, ids, attention_mask):
        B, L = ids.shape
        x = self.embed_tokens(ids)
        dev = ids.device
        inv_freq = 1.0 / (self.theta ** (torch.arange(0, self.hd, 2, device=dev).float() / self.hd))
        freqs = torch.outer(torch.arange(L, device=dev).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        visible = torch.ones(L, L, dtype=torch.bool, device=dev).tril()[None, None] & attention_mask[:, None, None, :]
        mask = torch.zeros(visible.shape, device=dev).masked_fill(~visible, torch.finfo(torch.float32).min)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        h = self.norm(x)
        w = attention_mask.float()[..., None]
        return (h * w).sum(1) / w.sum(1)


def main():
    p = argparse.ArgumentParser()
    for name, default in [("layers", 24), ("hidden", 896), ("heads", 14), ("kv_heads", 2), ("intermediate", 4864),
                          ("vocab", 151936), ("batch", 32), ("len", 32), ("rank", 16), ("steps", 5), ("threads", 2)]:
        p.add_argument("--" + name.replace("_", "-"), dest=name, type=int, default=default)
    p.add_argument("--alpha", type=float, default=32)
    p.add_argument("--device", default="cpu")
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32", help="bf16: forward under autocast")
    a = p.parse_args()
    device = torch.device(a.device)
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = Decoder(a).to(device).train()
    trained = [q for q in model.parameters() if q.requires_grad]
    optimizer = torch.optim.AdamW(trained, lr=1e-4, weight_decay=0.01)
    ids = torch.randint(0, a.vocab, (a.batch, a.len), device=device)
    mask = torch.ones(a.batch, a.len, dtype=torch.bool, device=device)
    target = torch.randn(a.batch, a.hidden, device=device)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=a.precision == "bf16")
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    seconds = []
    for step in range(a.steps + 1):
        start = time.perf_counter()
        optimizer.zero_grad()
        with autocast:
            pooled = model(ids, mask).float()
        loss = (pooled - target).pow(2).mean()
        loss.backward()
        optimizer.step()
        sync()
        if step > 0:
            seconds.append(time.perf_counter() - start)
    median = statistics.median(seconds)
    print(json.dumps({"impl": "pytorch", "layers": a.layers, "hidden": a.hidden, "batch": a.batch, "len": a.len, "rank": a.rank,
                      "threads": a.threads, "device": a.device, "precision": a.precision, "trained_parameters": sum(q.numel() for q in trained), "step_s": median,
                      "tokens_per_s": a.batch * a.len / median,
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


if __name__ == "__main__":
    main()
