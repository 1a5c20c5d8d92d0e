#!/usr/bin/python3
"""Reference outputs for the vision encoders' tests: tiny random ViT and SigLIP vision checkpoints and their pooled
embeddings of fixed pixel tensors, from a plain PyTorch transcription of Hugging Face's ViTModel (the final LayerNorm's
[CLS] vector) and SiglipVisionModel (pooler_output: the multi-head attention-pooling head), written from the
transformers sources, not from this project's C++.

Run once, by hand, with Debian's python3-torch; the output is committed, the tool is not a dependency:
    /usr/bin/python3 tests/reference/make_vision_fixtures.py tests/fixtures/vision
"""
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_decoder_fixtures import write_safetensors  # noqa: E402  (the same file format, F32 here)

CASES = {
    "vit": dict(model_type="vit", hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=48, image_size=32,
                patch_size=8, num_channels=3, layer_norm_eps=1e-12, hidden_act="gelu", qkv_bias=True, prefix="vit."),
    "siglip": dict(model_type="siglip_vision_model", hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=40,
                   image_size=32, patch_size=8, num_channels=3, layer_norm_eps=1e-6, hidden_act="gelu_pytorch_tanh", prefix="vision_model."),
}


def make_weights(c, g):
    h, f, p, n = c["hidden_size"], c["intermediate_size"], c["patch_size"], (c["image_size"] // c["patch_size"]) ** 2
    w = {}
    normal = lambda *shape, std=0.2: torch.randn(*shape, generator=g) * std

    def linear(name, i, o):
        w[name + ".weight"] = normal(o, i)
        w[name + ".bias"] = normal(o, std=0.05)

    def norm(name):
        w[name + ".weight"] = 1.0 + normal(h, std=0.1)
        w[name + ".bias"] = normal(h, std=0.05)

    if c["model_type"] == "vit":
        w["embeddings.cls_token"] = normal(1, 1, h, std=1.0)
        w["embeddings.position_embeddings"] = normal(1, n + 1, h, std=0.5)
        w["embeddings.patch_embeddings.projection.weight"] = normal(h, 3, p, p, std=0.1)
        w["embeddings.patch_embeddings.projection.bias"] = normal(h, std=0.05)
        for i in range(c["num_hidden_layers"]):
            l = f"encoder.layer.{i}."
            norm(l + "layernorm_before")
            for part in ("query", "key", "value"):
                linear(l + "attention.attention." + part, h, h)
            linear(l + "attention.output.dense", h, h)
            norm(l + "layernorm_after")
            linear(l + "intermediate.dense", h, f)
            linear(l + "output.dense", f, h)
        norm("layernorm")
        linear("pooler.dense", h, h)  # in the checkpoint, unused by the [CLS] pooling
    else:
        w["embeddings.patch_embedding.weight"] = normal(h, 3, p, p, std=0.1)
        w["embeddings.patch_embedding.bias"] = normal(h, std=0.05)
        w["embeddings.position_embedding.weight"] = normal(n, h, std=0.5)
        for i in range(c["num_hidden_layers"]):
            l = f"encoder.layers.{i}."
            norm(l + "layer_norm1")
            for part in ("q_proj", "k_proj", "v_proj", "out_proj"):
                linear(l + "self_attn." + part, h, h)
            norm(l + "layer_norm2")
            linear(l + "mlp.fc1", h, f)
            linear(l + "mlp.fc2", f, h)
        norm("post_layernorm")
        w["head.probe"] = normal(1, 1, h, std=1.0)
        w["head.attention.in_proj_weight"] = normal(3 * h, h)
        w["head.attention.in_proj_bias"] = normal(3 * h, std=0.05)
        linear("head.attention.out_proj", h, h)
        norm("head.layernorm")
        linear("head.mlp.fc1", h, f)
        linear("head.mlp.fc2", f, h)
    return w


def attention(x_q, x_kv, wq, bq, wk, bk, wv, bv, heads):
    b, lq, h = x_q.shape
    d = h // heads
    q = F.linear(x_q, wq, bq).view(b, lq, heads, d).transpose(1, 2)
    k = F.linear(x_kv, wk, bk).view(b, -1, heads, d).transpose(1, 2)
    v = F.linear(x_kv, wv, bv).view(b, -1, heads, d).transpose(1, 2)
    probs = torch.softmax(q @ k.transpose(-1, -2) / d ** 0.5, dim=-1)
    return (probs @ v).transpose(1, 2).reshape(b, lq, h)


def forward(c, w, pixels):
    h, eps, heads = c["hidden_size"], c["layer_norm_eps"], c["num_attention_heads"]
    act = (lambda t: F.gelu(t)) if c["hidden_act"] == "gelu" else (lambda t: F.gelu(t, approximate="tanh"))
    ln = lambda t, n: F.layer_norm(t, (h,), w[n + ".weight"], w[n + ".bias"], eps)
    lin = lambda t, n: F.linear(t, w[n + ".weight"], w[n + ".bias"])
    b = pixels.shape[0]
    if c["model_type"] == "vit":
        x = F.conv2d(pixels, w["embeddings.patch_embeddings.projection.weight"], w["embeddings.patch_embeddings.projection.bias"],
                     stride=c["patch_size"]).flatten(2).transpose(1, 2)
        x = torch.cat([w["embeddings.cls_token"].expand(b, -1, -1), x], dim=1) + w["embeddings.position_embeddings"]
        for i in range(c["num_hidden_layers"]):
            l = f"encoder.layer.{i}."
            a = l + "attention.attention."
            y = ln(x, l + "layernorm_before")
            x = x + lin(attention(y, y, w[a + "query.weight"], w[a + "query.bias"], w[a + "key.weight"], w[a + "key.bias"],
                                  w[a + "value.weight"], w[a + "value.bias"], heads), l + "attention.output.dense")
            x = x + lin(act(lin(ln(x, l + "layernorm_after"), l + "intermediate.dense")), l + "output.dense")
        return ln(x, "layernorm")[:, 0]
    x = F.conv2d(pixels, w["embeddings.patch_embedding.weight"], w["embeddings.patch_embedding.bias"],
                 stride=c["patch_size"]).flatten(2).transpose(1, 2)
    x = x + w["embeddings.position_embedding.weight"].unsqueeze(0)
    for i in range(c["num_hidden_layers"]):
        l = f"encoder.layers.{i}."
        a = l + "self_attn."
        y = ln(x, l + "layer_norm1")
        x = x + lin(attention(y, y, w[a + "q_proj.weight"], w[a + "q_proj.bias"], w[a + "k_proj.weight"], w[a + "k_proj.bias"],
                              w[a + "v_proj.weight"], w[a + "v_proj.bias"], heads), a + "out_proj")
        x = x + lin(act(lin(ln(x, l + "layer_norm2"), l + "mlp.fc1")), l + "mlp.fc2")
    x = ln(x, "post_layernorm")
    # SiglipMultiheadAttentionPoolingHead: torch.nn.MultiheadAttention(probe, x, x), then LayerNorm + MLP with a residual.
    mha = torch.nn.MultiheadAttention(h, heads, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(w["head.attention.in_proj_weight"])
        mha.in_proj_bias.copy_(w["head.attention.in_proj_bias"])
        mha.out_proj.weight.copy_(w["head.attention.out_proj.weight"])
        mha.out_proj.bias.copy_(w["head.attention.out_proj.bias"])
    probe = w["head.probe"].repeat(b, 1, 1)
    pooled = mha(probe, x, x)[0]
    pooled = pooled + lin(act(lin(ln(pooled, "head.layernorm"), "head.mlp.fc1")), "head.mlp.fc2")
    return pooled[:, 0]


def main(out_dir):
    g = torch.Generator().manual_seed(20261127)
    for case, spec in CASES.items():
        c = {k: v for k, v in spec.items() if k != "prefix"}
        folder = os.path.join(out_dir, case)
        os.makedirs(folder, exist_ok=True)
        w = make_weights(c, g)
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(dict(c, architectures=["ViTModel" if case == "vit" else "SiglipVisionModel"]), f, indent=2)
        write_safetensors(os.path.join(folder, "model.safetensors"), {spec["prefix"] + k: v for k, v in w.items()}, "F32")
        pixels = torch.randn(2, 3, c["image_size"], c["image_size"], generator=g)
        with torch.no_grad():
            pooled = forward(c, w, pixels)
        with open(os.path.join(folder, "expected.json"), "w") as f:
            json.dump({"pixels": [round(v, 6) for v in pixels.flatten().tolist()],
                       "pooled": [[round(v, 6) for v in row] for row in pooled.tolist()]}, f)


if __name__ == "__main__":
    main(sys.argv[1])
