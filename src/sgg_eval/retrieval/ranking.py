"""S2G's evaluation: where each image's caption graph ranks among every caption graph of a gallery.

As Scene-Graph-Benchmark.pytorch computes it (KaihuaTang/Scene-Graph-Benchmark.pytorch at 6f75881,
``maskrcnn_benchmark/image_retrieval/evaluation.py``, ``evaluator``), on ``N`` images with an image-graph
embedding ``g_i`` and a caption-graph embedding ``t_i`` each (float32):

- ``sim[i, j] = (g_i · t_j) / (|g_i| |t_j|)``, the cosine similarity, in float32 as torch computes it;
- ``rank_i = |{j : sim[i, j] >= sim[i, i]}|``: 1 when image i's own caption is strictly the most similar; ties
  count against it (a caption as similar as its own is ranked before it);
- ``R@K = |{i : rank_i < K}| / N`` for K in ``S2G_KS``: the evaluator's ``pred_rank < k``. Since ``rank_i >= 1``
  this is the usual "own caption within the first K - 1"; R@1 is 0 by construction. sgg-eval reports the
  evaluator's numbers under its names (they are the ones Tang et al.'s table prints) and, beside them,
  ``R_within@K = |{i : rank_i <= K}| / N``, the usual reading;
- the mean and median of ``rank_i``.

The reference ranks an image's own caption among the gallery's captions (``IMAGE_TO_CAPTION``: the similarity
matrix's rows), although S2G is described as finding the image from a caption. ``CAPTION_TO_IMAGE`` is that
reading: caption i's rank among the gallery's images, ``|{j : sim[j, i] >= sim[i, i]}|`` (the columns), with the
same definitions of R@K and R_within@K.

A gallery is the first ``n`` test images (``S2G_GALLERIES``: 1,000 and 5,000, upstream's ``num_test``), in the
test file's order.
"""

from __future__ import annotations

import numpy as np

from sgg_eval.core.defaults import S2G_KS
from sgg_eval.metrics.names import metric_name

IMAGE_TO_CAPTION, CAPTION_TO_IMAGE = "image_to_caption", "caption_to_image"
DIRECTIONS = (IMAGE_TO_CAPTION, CAPTION_TO_IMAGE)


def cosine_similarity(image: np.ndarray, text: np.ndarray) -> np.ndarray:
    """``[N, N]`` float32: ``image @ text.T`` divided by the outer product of the rows' L2 norms."""
    image, text = np.asarray(image, dtype=np.float32), np.asarray(text, dtype=np.float32)
    dots = image @ text.T
    norm = np.linalg.norm(image, axis=1)[:, None] * np.linalg.norm(text, axis=1)[None, :]
    return dots / norm


def gold_ranks(similarity: np.ndarray) -> np.ndarray:
    """``rank_i``: how many captions are at least as similar to image i as its own (itself included)."""
    return (similarity >= np.diag(similarity)[:, None]).sum(axis=1)


def retrieval_metrics(
    image: np.ndarray, text: np.ndarray, gallery: int, direction: str = IMAGE_TO_CAPTION
) -> dict[str, float]:
    """The metrics on the first ``gallery`` images (all of them when there are fewer), in ``direction``."""
    n = min(gallery, len(image))
    similarity = cosine_similarity(image[:n], text[:n])
    ranks = gold_ranks(similarity if direction == IMAGE_TO_CAPTION else similarity.T)
    out = {metric_name("R", k): float(np.count_nonzero(ranks < k) / n) for k in S2G_KS}
    out.update({metric_name("R_within", k): float(np.count_nonzero(ranks <= k) / n) for k in S2G_KS})
    out["mean_rank"], out["median_rank"] = float(ranks.mean()), float(np.median(ranks))
    out["images"] = n
    return out
