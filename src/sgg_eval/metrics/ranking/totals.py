"""The running sums of one evaluation (:class:`Totals`) and what they hold: the image counts a run reports
(``COUNT_KEYS``, and ``PREPARED_KEYS`` where the GT is prepared) and the collectors gathered from every image
beside the ranks (``COLLECTORS``). ``blocks.accumulate`` merges ranked tasks into one; ``api.Evaluator`` keeps
one across ``add`` calls and merges another evaluator's."""

from __future__ import annotations

from collections.abc import Callable

from sgg_eval.data.types import Vocabulary
from sgg_eval.metrics.detection import BoxCollector
from sgg_eval.metrics.informative import IRCollector
from sgg_eval.metrics.misuse import empty_signals, merge_signal
from sgg_eval.metrics.oiv6 import OICollector
from sgg_eval.metrics.reduce import Accumulator

# What may be collected from every image beside the ranks (``accumulate(collectors=...)``): name -> a new
# collector for the options. Each has ``add(images)``, ``finish()`` (done with a task's images) and ``merge``
# (the next tasks', in order); none looks beyond an image, so grouping and workers change nothing.
COLLECTORS = {
    "boxes": lambda opts: BoxCollector(),  # the detector's box mAP (SGDet)
    "oi_records": lambda opts: OICollector(score_kind=opts.score_kind),  # the Open Images V6 protocol's records
    "informative": IRCollector,  # each image's InformativeRecall@K (--captions)
}


COUNT_KEYS = (
    "images_input",
    "images_evaluated",
    "images_skipped_no_gt",
    "images_skipped_no_pred",
    "images_with_zeroshot_gt",
)
# What GT preparation changed (an open-vocabulary protocol, or a split kept unclipped: metrics.openvocab)
PREPARED_KEYS = {
    "gt_images_capped": "capped_images",
    "gt_boxes_merged": "merged_boxes",
    "gt_boxes_clipped": "clipped_boxes",
}


def prepares_gt(opts) -> bool:
    """Whether a run with ``opts`` prepares the GT before ranking (``metrics.openvocab.prepare_images``)."""
    return opts.openvocab is not None or opts.clip_gt


def count_keys(opts) -> tuple[str, ...]:
    """The image counts a run with ``opts`` reports."""
    return COUNT_KEYS + (tuple(PREPARED_KEYS) if prepares_gt(opts) else ())


class Totals:
    """The running sums of one evaluation: the accumulator, the image counts with the misuse signals, and the
    collectors (``COLLECTORS``), which ranked tasks are merged into in image order."""

    def __init__(self, vocab: Vocabulary, opts, collectors: tuple[str, ...]):
        self.acc = Accumulator(vocab.num_predicates)
        self.counts = {**dict.fromkeys(count_keys(opts), 0), **empty_signals()}
        self.collected = {name: COLLECTORS[name](opts) for name in collectors}

    def add(
        self,
        result,
        on_records: Callable[[list[dict]], None] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> None:
        """Merge one ``blocks.rank_task`` result (the next images): its collectors, then its blocks in order;
        ``on_records`` gets each block's per-image records, ``progress`` the images done after each block."""
        ranked, extras = result
        for name, part in extras.items():
            self.collected[name].merge(part)
        for acc, block_counts in ranked:  # block by block, in order
            if on_records is not None:  # handed on now, so memory stays flat however long the run
                on_records(acc.records)
                acc.records = []
            self.acc.merge(acc)
            for key, value in block_counts.items():
                merge_signal(self.counts, key, value)
            if progress is not None:
                progress(self.counts["images_input"])

    def merge(self, other: Totals, shift: int) -> None:
        """Append ``other``'s images after these; ``shift`` is added to their image ids in the collectors (the
        number of image positions before them)."""
        self.acc.merge(other.acc)
        for key, value in other.counts.items():
            merge_signal(self.counts, key, value)
        for name, part in other.collected.items():
            self.collected[name].merge(part, shift=shift)
