"""S2G's retrieval model: ``SGEncode`` as Scene-Graph-Benchmark.pytorch trains it (``tools/image_retrieval_main.py``
imports ``maskrcnn_benchmark/image_retrieval/modelv2.py``; checked at 6f75881), in PyTorch (the optional extra
``sgg-eval[s2g]``; nothing else in sgg-eval imports this module).

One graph, ``E`` entities and ``R`` relations, each side (image, caption) with its own embedding tables (512-d,
``N(0, 1)`` as ``nn.Embedding`` starts them):

- ``q_0[e] = obj(entity_e)``, ``[E, 512]``; ``v[r] = [head(s_r), tail(o_r), pred(p_r)]``, ``[R, 1536]``;
- ``A[r, e] = G[e, r] / (Σ_e' G[e', r] + 1e-9)``, with ``G`` the graph's incidence (``graphs.incidence``);
- two glimpses ``g``: ``h_g = Σ_e (Σ_r relu(W_v^g v[r]) A[r, e]) ⊙ relu(W_q^g q_g[e])`` (``[512]``), then
  ``q_{g+1} = q_g + W_a^g h_g`` (added to every entity); each ``W`` is weight-normalised over the whole matrix
  (``weight_norm(dim=None)``: ``W = g · V / ‖V‖``) and preceded by dropout 0.2;
- the encoding: ``relu(W_2 relu(W_1 Σ_e q_2[e]))``, ``[1024]``.

The loss of one sample (image ``i``, its caption ``t``; a random other image ``i'`` with its caption ``t'``) is two
triplet hinges on maskrcnn_benchmark's smooth-L1 distance (``β = 1/9``, mean over the 1,024 dimensions),
``[d(i, t) + 1 - d(i, t')]_+ + [d(t', i') + 1 - d(t, i')]_+``; a batch's loss is the mean of its ``2B`` hinges.

The reference encodes graphs one at a time; this encodes a batch of graphs at once, concatenated (``PackedGraphs``:
the sums over a graph's entities and relations are index sums), so each graph's encoding is the reference's, to
float rounding; ``tests/test_s2g_model.py`` checks it against the reference's own
``SGEncode`` loaded with the same weights.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from sgg_eval.core.defaults import S2G_MODEL
from sgg_eval.retrieval.graphs import incidence

EMBED, HIDDEN, FINAL, GLIMPSES, DROPOUT, MARGIN, SMOOTH_L1_BETA = (
    S2G_MODEL[k] for k in ("embed", "hidden", "final", "glimpses", "dropout", "margin", "smooth_l1_beta")
)


class WeightNormLinear(nn.Module):
    """``Linear`` with ``W = weight_g · weight_v / ‖weight_v‖`` (one norm for the whole matrix), dropout on its
    input and an optional ReLU: the reference's ``FCNet``. Its parameters are named as the reference's
    (``lin.weight_g``, ``lin.weight_v``, ``lin.bias``), so a state dict of either loads into the other."""

    def __init__(self, in_size: int, out_size: int, *, relu: bool, drop: float):
        super().__init__()
        base = nn.Linear(in_size, out_size)
        self.lin = nn.Module()
        self.lin.weight_v = nn.Parameter(base.weight.detach().clone())
        self.lin.weight_g = nn.Parameter(torch.linalg.vector_norm(base.weight.detach()))
        self.lin.bias = nn.Parameter(base.bias.detach().clone())
        self.drop = nn.Dropout(drop)
        self.relu = relu

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = self.lin.weight_g * self.lin.weight_v / torch.linalg.vector_norm(self.lin.weight_v)
        x = F.linear(self.drop(x), weight, self.lin.bias)
        return F.relu(x) if self.relu else x


class Glimpse(nn.Module):
    """One of the reference's ``ApplySingleAttention``: ``[B, 512]``, one update for every entity of a graph."""

    def __init__(self):
        super().__init__()
        self.lin_v = WeightNormLinear(3 * EMBED, HIDDEN, relu=True, drop=DROPOUT)
        self.lin_q = WeightNormLinear(EMBED, HIDDEN, relu=True, drop=DROPOUT)
        self.lin_atten = WeightNormLinear(HIDDEN, HIDDEN, relu=False, drop=DROPOUT)

    def forward(self, v: torch.Tensor, q: torch.Tensor, graphs: PackedGraphs) -> torch.Tensor:
        # v [ΣR, 1536], q [ΣE, 512]: per entity, its relations' features weighted; then summed per graph
        return self.lin_atten(graphs.per_graph(graphs.per_entity(self.lin_v(v)) * self.lin_q(q)))


class Side(nn.Module):
    """One side's embedding tables (image graphs or caption graphs), named as the reference's."""

    def __init__(self, num_objects: int, num_predicates: int):
        super().__init__()
        self.obj = nn.Embedding(num_objects, EMBED)
        self.head = nn.Embedding(num_objects, EMBED)
        self.tail = nn.Embedding(num_objects, EMBED)
        self.pred = nn.Embedding(num_predicates, EMBED)


class SGEncode(nn.Module):
    """The reference's ``SGEncode``; table sizes are each vocabulary's size + 1 (ids start at 1)."""

    def __init__(self, image_objects: int, image_predicates: int, text_objects: int, text_predicates: int):
        super().__init__()
        self.image = Side(image_objects + 1, image_predicates + 1)
        self.text = Side(text_objects + 1, text_predicates + 1)
        self.glimpses = nn.ModuleList(Glimpse() for _ in range(GLIMPSES))
        self.final_fc = nn.Sequential(
            nn.Linear(HIDDEN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, FINAL), nn.ReLU()
        )  # fmt: skip

    def encode(self, batch: PackedGraphs, side: str) -> torch.Tensor:
        """``[B, 1024]``: the encoding of each graph of ``batch`` (``side``: ``"image"`` or ``"text"``)."""
        tables = self.image if side == "image" else self.text
        q = tables.obj(batch.entities)
        rel = batch.relations
        v = torch.cat([tables.head(rel[:, 0]), tables.tail(rel[:, 1]), tables.pred(rel[:, 2])], dim=-1)
        for glimpse in self.glimpses:
            q = q + glimpse(v, q, batch)[batch.entity_graph]
        return self.final_fc(batch.per_graph(q))


class PackedGraphs:
    """``B`` graphs of one side, concatenated: ``entities [ΣE]`` with ``entity_graph [ΣE]`` (each entity's graph),
    ``relations [ΣR, 3]``, and the attention's non-zero cells: entity ``cell_entity``, relation
    ``cell_relation``, weight ``cell_weight = G[e, r] / (Σ_e' G[e', r] + 1e-9)``. No padding: a graph's cost is
    its own size."""

    def __init__(self, graphs, device: torch.device):
        e_counts = np.array([len(g.entities) for g in graphs], dtype=np.int64)
        r_counts = np.array([len(g.relations) for g in graphs], dtype=np.int64)
        e_start, r_start = np.cumsum(e_counts) - e_counts, np.cumsum(r_counts) - r_counts
        cells_e, cells_r, weights = [], [], []
        for g, e0, r0 in zip(graphs, e_start, r_start):
            inc = incidence(g)
            e, r = np.nonzero(inc)
            cells_e.append(e + e0)
            cells_r.append(r + r0)
            weights.append(inc[e, r] / (inc.sum(axis=0)[r] + np.float32(1e-9)))
        self.count = len(graphs)
        self.entities = torch.from_numpy(np.concatenate([g.entities for g in graphs])).to(device)
        self.entity_graph = torch.from_numpy(np.repeat(np.arange(len(graphs)), e_counts)).to(device)
        self.relations = torch.from_numpy(np.concatenate([g.relations for g in graphs]).reshape(-1, 3)).to(device)
        self.cell_entity = torch.from_numpy(np.concatenate(cells_e)).to(device)
        self.cell_relation = torch.from_numpy(np.concatenate(cells_r)).to(device)
        self.cell_weight = torch.from_numpy(np.concatenate(weights).astype(np.float32)).to(device)

    def per_entity(self, rows: torch.Tensor) -> torch.Tensor:
        """``[ΣE, D]``: each entity's attention-weighted sum of its relations' rows ``[ΣR, D]``."""
        out = rows.new_zeros((len(self.entities), rows.shape[1]))
        return out.index_add(0, self.cell_entity, rows[self.cell_relation] * self.cell_weight[:, None])

    def per_graph(self, rows: torch.Tensor) -> torch.Tensor:
        """``[B, D]``: the sum of each graph's entity rows ``[ΣE, D]``."""
        return rows.new_zeros((self.count, rows.shape[1])).index_add(0, self.entity_graph, rows)


def smooth_l1(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """maskrcnn_benchmark's ``smooth_l1_loss`` (``β = 1/9``), the mean over the last axis, one per row."""
    n = (a - b).abs()
    return torch.where(n < SMOOTH_L1_BETA, 0.5 * n**2 / SMOOTH_L1_BETA, n - 0.5 * SMOOTH_L1_BETA).mean(dim=-1)


def triplet_loss(image: torch.Tensor, text: torch.Tensor, neg_image: torch.Tensor, neg_text: torch.Tensor):
    """The mean of the batch's ``2B`` hinges (module docstring); ``[B, 1024]`` each."""
    forward = smooth_l1(image, text) + MARGIN - smooth_l1(image, neg_text)
    backward = smooth_l1(neg_text, neg_image) + MARGIN - smooth_l1(text, neg_image)
    hinges = torch.cat([F.relu(forward), F.relu(backward)])
    return hinges.sum() / (len(hinges) + 1e-9)
