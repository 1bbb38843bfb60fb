"""InformativeRecall@K as Maelic/SGG-Benchmark's ``SGInformativeRecall`` computes it (``sgg_metrics.py`` @ a664201;
docs/sgg_benchmark.md): the recall of an image's caption triplets by its predicted triplets, read as text.

Per image with GT relations and a non-empty caption list ``G`` (its entry in the caption-triplet file):

- every stored prediction, in the stored order, becomes the string ``"<subject> <predicate> <object>"`` from the
  class and predicate names (labels as in matching: PredCls takes the GT's; predicate = 1 + argmax of the
  foreground scores);
- prediction i matches caption j when the cosine similarity of their embeddings is above ``IR_SIMILARITY``
  (strictly); with the ``exact`` encoder (model-free: identical strings have similarity 1, others 0) that is
  string equality;
- ``IR@K = |captions matched by the first K predictions| / len(G)`` (a repeated caption counts twice);

``IR@K`` is the mean over those images, in image order (as its ``np.mean``), at ``IR_KS``. No box is looked at.
An evaluated image without an entry, or with an empty one, is left out of the mean and counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sgg_eval.arrays.rowwise import unit_rows
from sgg_eval.core.defaults import IR_ENCODER, IR_KS
from sgg_eval.core.errors import InputError

IR_SIMILARITY = np.float32(0.8)  # its `cos_sim > 0.8`
EXACT = IR_ENCODER  # the model-free encoder
_MODELS: dict[str, object] = {}  # per process: a SentenceTransformer is loaded once


@dataclass(frozen=True)
class Informative:
    """What IR@K needs: ``captions`` per image id (``str(image_id)``, as its file keys them), the ``encoder``
    (``exact`` or a SentenceTransformer, a Hub name or a local folder), the class and predicate names the predictions
    are read as, and the file's ``source``."""

    captions: dict = field(repr=False)
    encoder: str
    objects: tuple[str, ...]
    predicates: tuple[str, ...]
    source: str = ""


def load_sentence_model(model: str, field: str, missing: str, what: str = "the model"):
    """The SentenceTransformer ``model`` (a Hub name or a local folder) on the CPU, the optional extra
    ``sgg-eval[provision]`` (InformativeRecall here, ProVision's names in ``text.provision``); an :class:`InputError`
    naming ``field``: ``missing`` when the package is not installed, else why ``what`` does not load."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise InputError(missing, field=field) from None
    try:
        return SentenceTransformer(model, device="cpu")
    except Exception as exc:  # any failure to fetch or read a model is the user's environment, not a bug
        raise InputError(f"cannot load {what} {model!r}: {exc}", field=field) from None


def sentence_model(model: str):
    """The encoder ``model`` of ``--ir-encoder``, loaded once per process (:func:`load_sentence_model`)."""
    if model not in _MODELS:
        _MODELS[model] = load_sentence_model(
            model,
            "--ir-encoder",
            "--ir-encoder with a model needs sentence-transformers: pip install 'sgg-eval[provision]', or use "
            "--ir-encoder exact",
        )
    return _MODELS[model]


def caption_matches(predicted: list[str], captions: list[str], encoder: str) -> list[list[int]]:
    """For each predicted string, the indices of the captions it matches."""
    if encoder == EXACT:
        where: dict[str, list[int]] = {}
        for j, caption in enumerate(captions):
            where.setdefault(caption, []).append(j)
        return [where.get(s, []) for s in predicted]
    if not predicted:
        return []
    st = sentence_model(encoder)
    pred = unit_rows(st.encode(list(predicted), convert_to_numpy=True))
    caps = unit_rows(st.encode(list(captions), convert_to_numpy=True))
    sims = pred @ caps.T
    return [np.flatnonzero(row > IR_SIMILARITY).tolist() for row in sims]


def image_recall(predicted: list[str], captions: list[str], encoder: str) -> list[float]:
    """``IR@K`` of one image at each K of ``IR_KS``."""
    matches = caption_matches(predicted, captions, encoder)
    out = []
    for k in IR_KS:
        hit = set()
        for m in matches[:k]:
            hit.update(m)
        out.append(len(hit) / len(captions))
    return out


class IRCollector:
    """Each image's IR@K, in image order (``add``, a block of images at a time; ``merge``, the next blocks')."""

    def __init__(self, opts):
        self.task_gt_labels = opts.task_spec.gt_labels
        self.informative: Informative | None = opts.informative
        self.values: list[list[float]] = []
        self.without_captions = 0

    def add(self, images: list) -> None:
        info = self.informative
        for gt, pred in images:
            if not len(gt.rels):
                continue  # skipped by every metric, as there
            captions = info.captions.get(str(gt.image_id))  # keyed as its file is: str(image_id)
            if not captions:
                self.without_captions += 1
                continue
            labels = gt.labels if self.task_gt_labels else pred.labels
            strings = []
            if len(pred.pairs):
                predicate = 1 + np.argmax(pred.rel_scores[:, 1:], axis=1)
                for (s, o), p in zip(pred.pairs.tolist(), predicate.tolist()):
                    strings.append(
                        f"{info.objects[labels[s] - 1]} {info.predicates[p - 1]} {info.objects[labels[o] - 1]}"
                    )
            self.values.append(image_recall(strings, list(captions), info.encoder))

    def finish(self) -> IRCollector:
        self.informative = None  # the captions stay with the options, not with every block's result
        return self

    def merge(self, other: IRCollector, shift: int = 0) -> None:
        self.values += other.values
        self.without_captions += other.without_captions

    def metrics(self) -> dict[str, float | None]:
        """``IR@K`` (null when no image has captions)."""
        if not self.values:
            return {f"IR@{k}": None for k in IR_KS}
        # each K's values as one contiguous array, summed as its np.mean of a list sums them
        return {f"IR@{k}": float(np.mean(np.array([v[i] for v in self.values]))) for i, k in enumerate(IR_KS)}
