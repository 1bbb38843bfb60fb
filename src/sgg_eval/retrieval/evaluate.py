"""One S2G evaluation, end to end (docs/s2g.md): a model's SGDet predictions on train, val and test and a
caption-graph file in; the retrieval model trained on its graphs, the test block embedded and ranked; the
metrics document out. The only entry point that needs torch (imported when called, so the rest of sgg-eval and
this module's callers import without it)."""

from __future__ import annotations

from collections.abc import Callable

from sgg_eval.core.defaults import S2G_GALLERIES, S2G_MODEL, S2G_TEST_BLOCK, S2G_TRAINING, S2G_VAL_BLOCK
from sgg_eval.core.errors import InputError
from sgg_eval.formats.s2g_captions import read_caption_graphs
from sgg_eval.metrics.names import metric_name
from sgg_eval.retrieval.dataset import Blocks, Vocabularies, read_split, upstream_blocks
from sgg_eval.retrieval.ranking import DIRECTIONS, IMAGE_TO_CAPTION, retrieval_metrics

SOURCE = "Scene-Graph-Benchmark.pytorch (KaihuaTang, 6f75881): maskrcnn_benchmark/image_retrieval, modelv2.SGEncode"
VAL_K = 20  # the recall the progress line shows for the validation block


def torch_missing() -> str | None:
    """The one line to print when the optional extra is not installed, else None."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        return "S2G trains a retrieval model in PyTorch, which is not installed: pip install 'sgg-eval[s2g]'"
    return None


def read_blocks(train: str, val: str, test: str, captions: str, gts: dict[str, str | None]) -> tuple[Blocks, dict]:
    """The three blocks of usable images, and the vocabularies' sizes (image objects, image predicates, caption
    objects, caption predicates). ``gts``: the GT split store of each of ``train``/``val``/``test`` (``None`` for a
    file that carries its own)."""
    from sgg_eval.boxes.sources import open_predictions

    test_source = open_predictions(test, gt=gts.get("test"))
    graphs = read_caption_graphs(captions, test_source.vocab.num_predicates)
    vocab = Vocabularies.of(test_source.vocab.object_classes, graphs)
    splits = {
        name: read_split(path, gts.get(name), graphs, vocab, keep_small=True)
        for name, path in (("train", train), ("val", val), ("test", test))
    }
    sizes = tuple(
        len(v) for v in (vocab.image_objects, vocab.image_predicates, vocab.text_objects, vocab.text_predicates)
    )
    return upstream_blocks(splits["train"], splits["val"], splits["test"]), sizes


def _galleries(blocks: Blocks, image, text) -> tuple[dict, dict]:
    """The reference's galleries (``S2G_GALLERIES``) the test block is large enough for: a gallery of ``n`` is
    cut when the block was cut from at least ``n`` caption-valid images, and holds its usable ones among the first
    ``n`` (the reference's ``similarity[:n, :n]``). When none is, the whole block is the one gallery, keyed by its
    size (a small test set; not comparable with the papers' 1k and 5k numbers)."""
    reported, not_reported = {}, {}
    for n in S2G_GALLERIES:
        if blocks.test_listed < n:
            not_reported[str(n)] = f"the test predictions have {blocks.test_listed} caption-valid images, not {n}"
            continue
        size = min(n, len(blocks.test))
        reported[str(n)] = {"images": size, **{d: retrieval_metrics(image, text, n, d) for d in DIRECTIONS}}
    if not reported:
        n = len(blocks.test)
        reported[str(n)] = {"images": n, **{d: retrieval_metrics(image, text, n, d) for d in DIRECTIONS}}
    return reported, not_reported


def collapsed(image, text) -> str | None:
    """Why the trained model's test encodings cannot rank (every graph of a side encoded alike, or a side all
    zeros, whose cosine is undefined), or None. Its numbers are then chance or a tie artefact, and say nothing
    of the SGDet graphs: the document and the summary say so."""
    import numpy as np

    for side, rows in (("image", image), ("caption", text)):
        if len(rows) and not np.linalg.norm(rows, axis=1).all():
            return f"some {side} graphs are encoded as all zeros (ReLU outputs dead): try a lower learning rate"
        if len(rows) > 1 and np.ptp(rows, axis=0).max() <= 1e-6 * max(1.0, float(np.abs(rows).max())):
            return f"every {side} graph has the same encoding: try a lower learning rate"
    return None


def run_s2g(
    train: str,
    val: str,
    test: str,
    captions: str,
    *,
    gts: dict[str, str | None] | None = None,
    epochs: int = S2G_TRAINING["epochs"],
    seed: int = S2G_TRAINING["seed"],
    base_lr: float = S2G_TRAINING["base_lr"],
    device: str = "cpu",
    train_images: int | None = None,
    progress: Callable[[str], None] = lambda line: None,
) -> dict:
    """The S2G metrics document of one model (module docstring). ``train_images`` keeps only the first images of
    the training block (the reference trains on all of them; a smaller set is for quick runs, and is recorded)."""
    from sgg_eval.retrieval.training import Pairs, TrainConfig, embed
    from sgg_eval.retrieval.training import train as train_model

    blocks, sizes = read_blocks(train, val, test, captions, gts or {})
    data = blocks.train if train_images is None else blocks.train.take(0, train_images)
    if len(data) < 2 or len(blocks.test) < 2:
        raise InputError(
            f"{len(data)} training and {len(blocks.test)} test images have usable graphs (two entities and a "
            "relation on both sides): too few to train and rank",
            path=test,
        )
    config = TrainConfig(epochs=epochs, seed=seed, base_lr=base_lr, device=device)
    history = []

    def on_epoch(epoch: int, loss: float, lr: float, model) -> None:
        row = {"epoch": epoch, "loss": loss, "lr": lr}
        line = f"s2g: epoch {epoch}/{epochs}, loss {loss:.4f}, lr {lr:.4g}"
        if len(blocks.val) >= 2:
            image, text = embed(model, Pairs(blocks.val.image, blocks.val.text), config.device)
            name = metric_name("R_within", VAL_K)
            row[f"val_{name}"] = retrieval_metrics(image, text, len(image))[name]
            line += f", val {name} {row[f'val_{name}']:.3f} ({len(image)} images)"
        history.append(row)
        progress(line)

    model = train_model(sizes, Pairs(data.image, data.text), config, on_epoch)
    image, text = embed(model, Pairs(blocks.test.image, blocks.test.text), config.device)
    reported, not_reported = _galleries(blocks, image, text)
    return {
        "collapsed": collapsed(image, text),
        "protocol": "s2g",
        "source": SOURCE,
        "headline_direction": IMAGE_TO_CAPTION,
        "galleries": reported,
        "galleries_not_reported": not_reported,
        "images": {
            "train": len(data),
            "train_block": len(blocks.train),
            "val_block": len(blocks.val),
            "test_block": len(blocks.test),
            "test_listed": blocks.test_listed,
            "dropped_unusable": {"train": blocks.train.dropped, "val": blocks.val.dropped, "test": blocks.test.dropped},
        },
        "blocks": {"test": S2G_TEST_BLOCK, "val": S2G_VAL_BLOCK},
        "vocabularies": dict(zip(("image_objects", "image_predicates", "text_objects", "text_predicates"), sizes)),
        "training": {
            "epochs": epochs,
            "seed": seed,
            "device": device,
            "train_images": train_images,
            "model": S2G_MODEL,
            "solver": {**S2G_TRAINING, "epochs": epochs, "seed": seed, "base_lr": base_lr},
        },  # fmt: skip
        "history": history,
    }
