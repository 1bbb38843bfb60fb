"""S2G's data: every image that has both an SGDet prediction and caption graphs, with both graphs encoded
(``retrieval.graphs``), in the caption file's image order, as ``preprocessing.py`` writes them; and the blocks
``tools/image_retrieval_main.py`` cuts them into (``upstream_blocks``).

The reference keeps an image when the caption file marks it valid and both graphs exist; its loops then drop
an image whose image or caption graph has fewer than two entities or no relation (and, by accident of its
negative sampling, one whose random negative has: not reproduced, since it depends on the data loader's worker
seeds). sgg-eval keeps the first rule and counts what it drops.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sgg_eval.boxes.sources import open_predictions
from sgg_eval.core.defaults import S2G_TEST_BLOCK, S2G_VAL_BLOCK
from sgg_eval.core.errors import InputError
from sgg_eval.formats.s2g_captions import CaptionGraphs
from sgg_eval.retrieval.graphs import EncodedGraph, encode, image_graph, vocabulary


@dataclass(frozen=True)
class Vocabularies:
    """Each side's names numbered from 1 (``graphs.vocabulary``): image objects and predicates, caption objects
    and predicates."""

    image_objects: dict[str, int]
    image_predicates: dict[str, int]
    text_objects: dict[str, int]
    text_predicates: dict[str, int]

    @classmethod
    def of(cls, object_classes, captions: CaptionGraphs) -> Vocabularies:
        return cls(
            vocabulary(object_classes),
            vocabulary(captions.meta_predicates.values()),
            vocabulary(captions.objects),
            vocabulary(captions.predicates),
        )


@dataclass
class S2GSplit:
    """One split's images: COCO ids and both graphs, in the caption file's order; ``dropped``: images left out
    for a graph too small to encode (fewer than two entities, or no relation)."""

    coco_ids: list[int] = field(default_factory=list)
    image: list[EncodedGraph] = field(default_factory=list)
    text: list[EncodedGraph] = field(default_factory=list)
    dropped: int = 0

    def __len__(self) -> int:
        return len(self.coco_ids)

    def __add__(self, other: S2GSplit) -> S2GSplit:
        return S2GSplit(self.coco_ids + other.coco_ids, self.image + other.image, self.text + other.text,
                        self.dropped + other.dropped)  # fmt: skip

    def take(self, start: int, stop: int | None = None) -> S2GSplit:
        return S2GSplit(self.coco_ids[start:stop], self.image[start:stop], self.text[start:stop])

    def usable(self) -> S2GSplit:
        """The images whose two graphs are both usable (``EncodedGraph.usable``); ``dropped`` counts the rest."""
        keep = [i for i in range(len(self)) if self.image[i].usable() and self.text[i].usable()]
        out = S2GSplit([self.coco_ids[i] for i in keep], [self.image[i] for i in keep], [self.text[i] for i in keep])
        out.dropped = self.dropped + len(self) - len(keep)
        return out


@dataclass(frozen=True)
class Blocks:
    """The reference's three blocks, usable images only: ``test`` (its galleries are this block's first images),
    ``val`` (evaluated during training, never used to choose), ``train``. ``test_listed``: how many caption-valid
    images the test block was cut from, usable or not (a gallery of ``n`` is the reference's only when this
    reaches ``n``)."""

    train: S2GSplit
    val: S2GSplit
    test: S2GSplit
    test_listed: int


def upstream_blocks(train: S2GSplit, val: S2GSplit, test: S2GSplit) -> Blocks:
    """``image_retrieval_main.py``'s ``get_dataset`` and ``get_loader``: the test block is the first
    ``S2G_TEST_BLOCK`` (5,000) test images, the validation block the next ``S2G_VAL_BLOCK`` (1,000); the training
    images are the test images after those, then the train split's, then the val split's (which it merges into
    training, "it would be a waste"). Each block is cut from every caption-valid image (``read_split`` with
    ``keep_small``), then its unusable images are dropped, in that order, as the reference's loops drop them."""
    head = test.take(0, S2G_TEST_BLOCK)
    return Blocks(
        train=(test.take(S2G_TEST_BLOCK + S2G_VAL_BLOCK) + train + val).usable(),
        val=test.take(S2G_TEST_BLOCK, S2G_TEST_BLOCK + S2G_VAL_BLOCK).usable(),
        test=head.usable(),
        test_listed=len(head),
    )


def read_split(
    predictions: str, gt: str | None, captions: CaptionGraphs, vocab: Vocabularies, *, keep_small: bool = False
) -> S2GSplit:
    """The images of ``predictions`` (an SGDet file sgg-eval reads; ``gt`` its split store when the file has
    none) that the caption file marks valid and has graphs for. ``keep_small`` keeps graphs the reference's test
    loop would drop (for comparing with its preprocessing, which keeps them)."""
    source = open_predictions(predictions, gt=gt)
    if not source.vocab.num_predicates == len(captions.meta_predicates):
        raise InputError(
            f"{source.vocab.num_predicates} predicates, but the caption file names {len(captions.meta_predicates)}",
            path=predictions,
        )
    logits = source.score_kind == "logits"
    names = source.vocab.object_classes
    unknown = sorted(set(names) - set(vocab.image_objects))
    if unknown:
        raise InputError(f"object class {unknown[0]!r} is not among the test predictions' classes", path=predictions)
    graphs = {}
    for gt_image, pred in source.pairs():
        coco = captions.coco_of.get(int(gt_image.image_id))
        if coco is None or coco not in captions.graphs:
            continue
        labels, rels = image_graph(pred, logits=logits)
        entities = [names[c - 1] for c in labels.tolist()]
        relations = [(s, o, captions.meta_predicates[p]) for s, o, p in rels.tolist()]
        graphs[coco] = encode(entities, relations, vocab.image_objects, vocab.image_predicates)
    if not graphs:
        raise InputError(
            f"none of its {source.count} images has caption graphs in the caption file "
            f"({len(captions.coco_of)} images with captions): not the same images",
            path=predictions,
        )
    out = S2GSplit()
    for coco in dict.fromkeys(captions.coco_of.values()):  # the caption file's order
        if coco not in graphs:
            continue
        caption = captions.graphs[coco]
        text = encode(caption.entities, caption.relations, vocab.text_objects, vocab.text_predicates)
        if not keep_small and not (graphs[coco].usable() and text.usable()):
            out.dropped += 1
            continue
        out.coco_ids.append(coco)
        out.image.append(graphs[coco])
        out.text.append(text)
    return out
