"""The first-match ranks of evaluated images as records: one image's (:class:`ImageRanks`, what the panoptic
ranker and the tests' per-image reference give) and a block's, concatenated (:class:`BlockRanks`, what
``ranking.block_ranks`` gives and ``Accumulator.add_many`` reduces). The families are defined in
``ranking.families``."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np


@dataclass(kw_only=True)
class _Families:
    """The per-row ranks of the families that not every task or input has; ``None`` where one does not apply."""

    imr: np.ndarray | None = None
    ng: np.ndarray | None = None
    gt_pair: np.ndarray | None = None
    per_predicate: np.ndarray | None = None
    triplet: np.ndarray | None = None
    predicate_rank: np.ndarray | None = None
    # the predicate (1-based) the pair of ``predicate_rank`` ranks first (its highest foreground score, the lower id
    # on a tie), -1 without a matching pair: the confusion matrix's column
    top_predicate: np.ndarray | None = None


@dataclass
class ImageRanks(_Families):
    """Per-row ranks of one image; ``None`` where the family does not apply."""

    predicates: np.ndarray
    gc: np.ndarray
    pair: np.ndarray
    num_gt_objects: int
    matched_gt_objects: int


ROW_FAMILIES = ("predicates", "gc", *(f.name for f in fields(_Families)))


@dataclass
class BlockRanks(_Families):
    """The ranks of a block of images, concatenated: every row field of :class:`ImageRanks` over the block's GT
    rows, image after image (``n_rows[image]`` rows each), ``pair`` over each image's distinct GT pairs
    (``n_pairs[image]`` each), and per image its GT object counts. ``block_ranks`` makes it and
    ``Accumulator.add_many`` reduces it without a Python step per image."""

    n_rows: np.ndarray
    n_pairs: np.ndarray
    num_gt_objects: np.ndarray
    matched_gt_objects: np.ndarray
    predicates: np.ndarray
    gc: np.ndarray
    pair: np.ndarray

    def __len__(self) -> int:
        return len(self.n_rows)

    @classmethod
    def of(cls, parts: list[ImageRanks] | list[BlockRanks]) -> BlockRanks:
        """The concatenation of images' (or blocks') ranks; a family is None only if it is None in all."""
        if parts and isinstance(parts[0], ImageRanks):
            counts = {
                "n_rows": [len(r.predicates) for r in parts],
                "n_pairs": [len(r.pair) for r in parts],
                "num_gt_objects": [r.num_gt_objects for r in parts],
                "matched_gt_objects": [r.matched_gt_objects for r in parts],
            }
            counts = {k: np.array(v, dtype=np.int64) for k, v in counts.items()}
        else:
            counts = {
                k: np.concatenate([getattr(r, k) for r in parts]).astype(np.int64)
                for k in ("n_rows", "n_pairs", "num_gt_objects", "matched_gt_objects")
            }
        joined = {}
        for name in (*ROW_FAMILIES, "pair"):
            values = [getattr(r, name) for r in parts]
            if all(v is None for v in values):
                joined[name] = None
                continue
            if any(v is None for v in values):
                raise ValueError(f"images of one block differ in the '{name}' family")
            joined[name] = np.concatenate(values)
        return cls(**counts, **joined)

    def select_rows(self, keep: np.ndarray) -> BlockRanks:
        """The ranks of the rows flagged in ``keep`` (one flag per row), images left without a row dropped: a
        subset of every image's GT rows as if it were the whole GT (open-vocabulary subsets)."""
        per_image = np.add.reduceat(keep.astype(np.int64), np.cumsum(self.n_rows) - self.n_rows) if len(self) else []
        kept = np.asarray(per_image) > 0
        pair_image = np.repeat(kept, self.n_pairs)
        rows = {name: None if getattr(self, name) is None else getattr(self, name)[keep] for name in ROW_FAMILIES}
        return BlockRanks(
            n_rows=np.asarray(per_image, dtype=np.int64)[kept],
            n_pairs=self.n_pairs[kept],
            num_gt_objects=self.num_gt_objects[kept],
            matched_gt_objects=self.matched_gt_objects[kept],
            pair=self.pair[pair_image],
            **rows,
        )

    def images(self) -> list[ImageRanks]:
        """Image by image, as :class:`ImageRanks`."""
        rows, pairs = np.cumsum(self.n_rows) - self.n_rows, np.cumsum(self.n_pairs) - self.n_pairs
        out = []
        for i in range(len(self)):
            r = slice(int(rows[i]), int(rows[i] + self.n_rows[i]))
            row_fields = {
                name: None if getattr(self, name) is None else getattr(self, name)[r] for name in ROW_FAMILIES
            }
            out.append(
                ImageRanks(
                    **row_fields,
                    pair=self.pair[int(pairs[i]) : int(pairs[i] + self.n_pairs[i])],
                    num_gt_objects=int(self.num_gt_objects[i]),
                    matched_gt_objects=int(self.matched_gt_objects[i]),
                )
            )
        return out
