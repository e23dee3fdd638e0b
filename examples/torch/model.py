"""The model of the PyTorch comparison: a bf16 transformer block (causal SDPA, GELU MLP), and its
CP-like variants: 16384 / CP tokens for CP = 1, 2, 4, 8 (as in DESIGN.md's PyTorch figures)."""

from __future__ import annotations

import torch
import torch.nn.functional as F


class Layer(torch.nn.Module):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm1 = torch.nn.LayerNorm(hidden)
        self.qkv = torch.nn.Linear(hidden, 3 * hidden)
        self.proj = torch.nn.Linear(hidden, hidden)
        self.norm2 = torch.nn.LayerNorm(hidden)
        self.up = torch.nn.Linear(hidden, 4 * hidden)
        self.down = torch.nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        tokens, hidden = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(tokens, 3, self.heads, hidden // self.heads).permute(1, 2, 0, 3)
        attention = F.scaled_dot_product_attention(q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), is_causal=True)
        x = x + self.proj(attention.squeeze(0).transpose(0, 1).reshape(tokens, hidden))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


class Block(torch.nn.Module):
    def __init__(self, hidden: int = 4096, heads: int = 32, layers: int = 2):
        super().__init__()
        self.layers = torch.nn.ModuleList(Layer(hidden, heads) for _ in range(layers))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def variants(tokens: int = 16384, cps=(1, 2, 4, 8)) -> dict[str, int]:
    """Variant name -> tokens per rank."""
    return {f"cp{cp}": tokens // cp for cp in cps}
