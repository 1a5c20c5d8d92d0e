#!/usr/bin/python3
"""Reference outputs for the decoder encoder's tests: tiny random checkpoints of the Qwen2, Qwen3 and Llama
architectures and their pooled embeddings, from a plain PyTorch transcription of Hugging Face's Qwen2Model /
Qwen3Model / LlamaModel forward (written from the transformers sources, not from this project's C++).

Run once, by hand, with Debian's python3-torch; the output is committed, the tool is not a dependency:
    /usr/bin/python3 tests/reference/make_decoder_fixtures.py tests/fixtures/decoder

Each case folder holds config.json, the weights (model.safetensors, or shards with model.safetensors.index.json)
under the "model." prefix of *ForCausalLM checkpoints, and expected.json: token id rows (right-padded batches
are the C++ side's business; here each row runs alone, so padding cannot leak in), and for each row the mean
of the final hidden states over all its tokens and the last token's final hidden state.
"""
import json
import math
import os
import struct
import sys

import torch

CASES = {
    # Qwen2: q/k/v biases, tied embeddings, fp32 weights in one file.
    "qwen2": dict(model_type="qwen2", vocab_size=96, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-6, rope_theta=10000.0,
                  max_position_embeddings=64, tie_word_embeddings=True, eos_token_id=95, bos_token_id=94,
                  hidden_act="silu", use_sliding_window=False, torch_dtype="float32"),
    # Qwen3: no biases, q/k RMSNorm per head, head_dim given (not hidden / heads), two shards.
    "qwen3_sharded": dict(model_type="qwen3", vocab_size=96, hidden_size=32, intermediate_size=40, num_hidden_layers=3,
                          num_attention_heads=4, num_key_value_heads=1, head_dim=12, rms_norm_eps=1e-6,
                          rope_theta=1000000.0, max_position_embeddings=64, tie_word_embeddings=True, eos_token_id=95,
                          attention_bias=False, hidden_act="silu", torch_dtype="bfloat16", shards=2),
    # Llama: no biases, untied lm_head (present in the file, unused by an encoder), bf16 weights.
    "llama_bf16": dict(model_type="llama", vocab_size=96, hidden_size=24, intermediate_size=56, num_hidden_layers=2,
                       num_attention_heads=3, num_key_value_heads=3, rms_norm_eps=1e-5, rope_theta=500000.0,
                       max_position_embeddings=64, tie_word_embeddings=False, eos_token_id=95, attention_bias=False,
                       mlp_bias=False, hidden_act="silu", torch_dtype="bfloat16", store_bf16=True),
}

ROWS = [[5, 17, 33, 2, 95], [40, 95], [7, 7, 7, 8, 9, 10, 11, 12, 13, 14, 60, 61, 62, 95], [95]]


def head_dim(c):
    return c.get("head_dim", c["hidden_size"] // c["num_attention_heads"])


def make_weights(c, generator):
    h, inter, hd = c["hidden_size"], c["intermediate_size"], head_dim(c)
    nh, nkv = c["num_attention_heads"], c["num_key_value_heads"]
    w = {}

    def normal(*shape, std=0.2):
        return torch.randn(*shape, generator=generator) * std

    w["model.embed_tokens.weight"] = normal(c["vocab_size"], h, std=1.0)
    qkv_bias = c["model_type"] == "qwen2" or c.get("attention_bias", False)
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = 1.0 + normal(h, std=0.1)
        w[p + "post_attention_layernorm.weight"] = 1.0 + normal(h, std=0.1)
        w[p + "self_attn.q_proj.weight"] = normal(nh * hd, h)
        w[p + "self_attn.k_proj.weight"] = normal(nkv * hd, h)
        w[p + "self_attn.v_proj.weight"] = normal(nkv * hd, h)
        w[p + "self_attn.o_proj.weight"] = normal(h, nh * hd)
        if qkv_bias:
            w[p + "self_attn.q_proj.bias"] = normal(nh * hd, std=0.1)
            w[p + "self_attn.k_proj.bias"] = normal(nkv * hd, std=0.1)
            w[p + "self_attn.v_proj.bias"] = normal(nkv * hd, std=0.1)
        if c.get("attention_bias", False) and c["model_type"] != "qwen2":
            w[p + "self_attn.o_proj.bias"] = normal(h, std=0.1)
        if c["model_type"] == "qwen3":
            w[p + "self_attn.q_norm.weight"] = 1.0 + normal(hd, std=0.1)
            w[p + "self_attn.k_norm.weight"] = 1.0 + normal(hd, std=0.1)
        w[p + "mlp.gate_proj.weight"] = normal(inter, h)
        w[p + "mlp.up_proj.weight"] = normal(inter, h)
        w[p + "mlp.down_proj.weight"] = normal(h, inter)
    w["model.norm.weight"] = 1.0 + normal(h, std=0.1)
    if not c["tie_word_embeddings"]:
        w["lm_head.weight"] = normal(c["vocab_size"], h)
    return w


def rms_norm(x, weight, eps):
    # transformers' Qwen2RMSNorm / LlamaRMSNorm: the statistics in float32, the weight applied after.
    input_dtype = x.dtype
    x = x.to(torch.float32)
    variance = x.pow(2).mean(-1, keepdim=True)
    x = x * torch.rsqrt(variance + eps)
    return weight * x.to(input_dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def forward(c, w, ids):
    """Final hidden states [L, h] of one unpadded row, as Qwen2Model / Qwen3Model / LlamaModel compute them."""
    h, hd = c["hidden_size"], head_dim(c)
    nh, nkv = c["num_attention_heads"], c["num_key_value_heads"]
    eps = c["rms_norm_eps"]
    L = len(ids)
    x = w["model.embed_tokens.weight"][torch.tensor(ids)]  # [L, h]
    inv_freq = 1.0 / (c["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    positions = torch.arange(L).float()
    freqs = torch.outer(positions, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()  # [L, hd]
    causal = torch.full((L, L), float("-inf")).triu(1)

    def linear(t, name):
        out = t @ w[name + ".weight"].T
        if name + ".bias" in w:
            out = out + w[name + ".bias"]
        return out

    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        residual = x
        t = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = linear(t, p + "self_attn.q_proj").view(L, nh, hd)
        k = linear(t, p + "self_attn.k_proj").view(L, nkv, hd)
        v = linear(t, p + "self_attn.v_proj").view(L, nkv, hd)
        if c["model_type"] == "qwen3":
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)  # [heads, L, hd]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        groups = nh // nkv
        k = k.repeat_interleave(groups, dim=0)
        v = v.repeat_interleave(groups, dim=0)
        scores = q @ k.transpose(1, 2) / math.sqrt(hd) + causal
        probs = torch.softmax(scores.float(), dim=-1).to(q.dtype)
        attended = (probs @ v).transpose(0, 1).reshape(L, nh * hd)
        x = residual + linear(attended, p + "self_attn.o_proj")
        residual = x
        t = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        gate = linear(t, p + "mlp.gate_proj")
        up = linear(t, p + "mlp.up_proj")
        x = residual + linear(torch.nn.functional.silu(gate) * up, p + "mlp.down_proj")
    return rms_norm(x, w["model.norm.weight"], eps)


def tensor_bytes(t, dtype):
    t = t.contiguous()
    if dtype == "BF16":
        return t.to(torch.bfloat16).view(torch.int16).numpy().tobytes()
    return t.to(torch.float32).numpy().tobytes()


def write_safetensors(path, tensors, dtype):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        data = tensor_bytes(t, dtype)
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def main(out_dir):
    generator = torch.Generator().manual_seed(20261126)
    for case, spec in CASES.items():
        c = {k: v for k, v in spec.items() if k not in ("shards", "store_bf16")}
        folder = os.path.join(out_dir, case)
        os.makedirs(folder, exist_ok=True)
        w = make_weights(c, generator)
        dtype = "BF16" if spec.get("store_bf16") or spec.get("shards") else "F32"
        if dtype == "BF16":  # the reference computes with exactly the values the file holds
            w = {k: v.to(torch.bfloat16).to(torch.float32) for k, v in w.items()}
        config = dict(c, architectures=[{"qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM",
                                         "llama": "LlamaForCausalLM"}[c["model_type"]]])
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(config, f, indent=2)
        shards = spec.get("shards", 1)
        if shards == 1:
            write_safetensors(os.path.join(folder, "model.safetensors"), w, dtype)
        else:
            names = list(w)
            weight_map = {}
            for s in range(shards):
                file = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
                part = {n: w[n] for n in names[s::shards]}
                write_safetensors(os.path.join(folder, file), part, dtype)
                weight_map.update({n: file for n in part})
            with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
                json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f, indent=2)
        expected = {"rows": ROWS, "mean": [], "last": []}
        with torch.no_grad():
            for ids in ROWS:
                hidden = forward(c, w, ids)
                expected["mean"].append([round(float(v), 7) for v in hidden.mean(0)])
                expected["last"].append([round(float(v), 7) for v in hidden[-1]])
        with open(os.path.join(folder, "expected.json"), "w") as f:
            json.dump(expected, f)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/decoder")
