"""S2G's training and embedding (PyTorch, the optional extra ``sgg-eval[s2g]``), as ``tools/image_retrieval_main.py``
trains ``SGEncode`` (``retrieval.model``) with S2G-RETRIEVAL.md's command; the values are ``S2G_TRAINING``.

- Each parameter is its own SGD group (``make_optimizer``): learning rate ``base_lr × batch`` (its ``rl_factor``;
  the bias factor is 1), weight decay ``1e-4`` (``0`` for a parameter whose name holds ``bias``); momentum 0.9.
- Per epoch the training images are shuffled; each gets one negative, another training image drawn uniformly
  (its dataset's ``__getitem__``). Per batch: the loss (``model.triplet_loss``), backward, the gradients clipped
  to a global L2 norm of 5, a step, and the learning-rate schedule stepped (``WarmupMultiStepLR``, per iteration:
  linear warm-up from ``0.1`` over 500 iterations, ``× 0.1`` at 10,000 and 16,000).
- After the last epoch the model embeds the test block (dropout off), and the evaluation ranks it
  (``retrieval.ranking``). The reference also evaluates every few epochs but keeps the last model, as here.

Deterministic: the seed drives torch's generator (initial weights, dropout) and the shuffles and negatives (a
numpy generator; the reference draws them from Python's ``random`` in four data-loader workers, which no seed
fixes); torch runs its deterministic algorithms and MKL its strict reproducible path (``MKL_CBWR``). The same
inputs, seed and thread count give the same numbers.
"""

from __future__ import annotations

import os
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

# MKL (torch's CPU BLAS) picks its code path by the arrays' memory alignment unless told otherwise, so the same
# matrix product can round differently from one run to the next; STRICT reproducibility fixes the path. Read once,
# when MKL starts: this module is the first to import torch in `sgg-eval s2g` and the s2g stage.
os.environ.setdefault("MKL_CBWR", "AUTO,STRICT")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from sgg_eval.core.defaults import S2G_TRAINING
from sgg_eval.retrieval.graphs import EncodedGraph
from sgg_eval.retrieval.model import PackedGraphs, SGEncode, triplet_loss

EMBED_CHUNK = 256  # graphs encoded at once when embedding (memory only: each graph's encoding is independent)


@dataclass(frozen=True)
class TrainConfig:
    epochs: int = S2G_TRAINING["epochs"]
    seed: int = S2G_TRAINING["seed"]
    batch: int = S2G_TRAINING["batch"]
    base_lr: float = S2G_TRAINING["base_lr"]
    device: str = "cpu"


@dataclass
class Pairs:
    """Images with both graphs encoded: ``image[i]`` and ``text[i]`` describe the same image."""

    image: Sequence[EncodedGraph] = field(default_factory=list)
    text: Sequence[EncodedGraph] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.image)


def lr_factor(iteration: int) -> float:
    """``WarmupMultiStepLR``'s factor after ``iteration`` steps."""
    t = S2G_TRAINING
    warmup = 1.0
    if iteration < t["warmup_iters"]:
        alpha = iteration / t["warmup_iters"]
        warmup = t["warmup_factor"] * (1 - alpha) + alpha
    return warmup * t["gamma"] ** bisect_right(t["steps"], iteration)


def optimizer_for(model: torch.nn.Module, batch: int, base_lr: float = S2G_TRAINING["base_lr"]) -> torch.optim.SGD:
    t = S2G_TRAINING
    groups = [
        {
            "params": [p],
            "lr": base_lr * batch,
            "weight_decay": t["weight_decay_bias"] if "bias" in name else t["weight_decay"],
        }
        for name, p in model.named_parameters()
    ]
    return torch.optim.SGD(groups, lr=base_lr, momentum=t["momentum"])


def embed(model: SGEncode, pairs: Pairs, device: torch.device) -> tuple[np.ndarray, np.ndarray]:
    """``(image [N, 1024], text [N, 1024])`` float32, dropout off."""
    model.eval()
    out = {"image": [], "text": []}
    with torch.no_grad():
        for side, graphs in (("image", pairs.image), ("text", pairs.text)):
            for start in range(0, len(graphs), EMBED_CHUNK):
                batch = PackedGraphs(graphs[start : start + EMBED_CHUNK], device)
                out[side].append(model.encode(batch, side).cpu().numpy())
    dim = model.final_fc[-2].out_features
    return tuple(np.concatenate(out[s]) if out[s] else np.zeros((0, dim), np.float32) for s in ("image", "text"))


def step(model: SGEncode, optimizer, schedule, batch: Pairs, device: torch.device) -> float:
    """One iteration on ``batch``: its first half the samples, its second half their negatives, in order.
    Returns the loss before the step."""
    b = len(batch) // 2
    image = model.encode(PackedGraphs(batch.image, device), "image")
    text = model.encode(PackedGraphs(batch.text, device), "text")
    loss = triplet_loss(image[:b], text[:b], image[b:], text[b:])
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], S2G_TRAINING["grad_clip"])
    optimizer.step()
    schedule.step()
    return float(loss.detach())


def new_model(sizes: tuple[int, int, int, int], config: TrainConfig) -> tuple[SGEncode, torch.optim.SGD, object]:
    """The model, its optimiser and its schedule, seeded by ``config.seed``."""
    torch.manual_seed(config.seed)
    model = SGEncode(*sizes).to(torch.device(config.device))
    optimizer = optimizer_for(model, config.batch, config.base_lr)
    return model, optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, lr_factor)


def train(
    sizes: tuple[int, int, int, int],
    data: Pairs,
    config: TrainConfig,
    on_epoch: Callable[[int, float, float, SGEncode], None] | None = None,
) -> SGEncode:
    """The trained model. ``sizes``: the four vocabularies' sizes (image objects, image predicates, caption
    objects, caption predicates). ``on_epoch(epoch, mean loss, learning rate, model)`` after each epoch."""
    if len(data) < 2:
        raise ValueError("S2G training needs at least two images (each needs a negative)")
    torch.use_deterministic_algorithms(True)
    model, optimizer, schedule = new_model(sizes, config)
    rng = np.random.default_rng(config.seed)
    device = torch.device(config.device)
    n = len(data)
    for epoch in range(config.epochs):
        model.train()
        order = rng.permutation(n)
        negative = rng.integers(0, n - 1, size=n)
        negative += negative >= np.arange(n)  # uniform over the other images
        losses = []
        for start in range(0, n, config.batch):
            rows = order[start : start + config.batch]
            both = np.concatenate([rows, negative[rows]])
            batch = Pairs([data.image[i] for i in both], [data.text[i] for i in both])
            losses.append(step(model, optimizer, schedule, batch, device))
        if on_epoch is not None:
            on_epoch(epoch + 1, float(np.mean(losses)), optimizer.param_groups[-1]["lr"], model)
    return model
