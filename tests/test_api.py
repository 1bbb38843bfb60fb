"""The Python API (docs/api.md): ``sgg_eval.Evaluator`` gives ``sgg-eval evaluate``'s numbers on the same
images written as an ``eval_results.pytorch``, to the last bit, for every task and box protocol and any
batching of ``add`` (one image, 7, all; dicts of arrays, BoxLists, torch tensors); ``merge`` of two halves
equals one pass to the last bit, and without box AP the order of the images changes no bit; bad input raises
``InputError`` naming the image and the field and adds nothing; the package imports and evaluates without
torch; ``evaluate_file`` returns what the command writes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import random_case, short_head, small_vocab
from torch_writer import eval_results_object, save_legacy

import sgg_eval
from sgg_eval import Evaluator, InputError, evaluate_file
from sgg_eval.cli import main
from sgg_eval.core import tuning
from sgg_eval.data.stats import compute_stats, write_stats

ROOT = Path(__file__).resolve().parents[1]
VOCAB = small_vocab(6, 5)
TASKS = ("predcls", "sgcls", "sgdet")


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    """Blocks of 16 images (SGDet: 2), so 70 images span several blocks and end on a partial one."""
    monkeypatch.setattr(tuning, "BLOCK_IMAGES", 16)


def _world(tmp_path, task: str, n: int = 70, seed: int = 5):
    rng = np.random.default_rng(seed)
    cases = [random_case(rng, VOCAB, task, i) for i in range(n)]
    stats = compute_stats([g for g, _ in cases[: n // 2]], VOCAB, [g for g, _ in cases])
    write_stats(tmp_path / "stats.h5", stats)
    save_legacy(eval_results_object(cases), tmp_path / "eval_results.pytorch")
    return cases, stats


def _dicts(case) -> tuple[dict, dict]:
    gt, pred = case
    return (
        {"boxes": gt.boxes, "labels": gt.labels, "relations": gt.rels, "image_size": (gt.width, gt.height)},
        {
            "boxes": pred.boxes,
            "labels": pred.labels,
            "scores": pred.obj_scores.astype(np.float32),
            "rel_pairs": pred.pairs,
            "rel_scores": pred.rel_scores.astype(np.float32),
        },
    )


def _bits(metrics: dict) -> str:
    """The metrics as exact text (repr of every float), so equality is to the last bit."""
    return json.dumps({k: None if v is None else float(v).hex() for k, v in metrics.items()}, sort_keys=True)


def _fed(ev: Evaluator, items: list, batch: int) -> Evaluator:
    for lo in range(0, len(items), batch):
        chunk = items[lo : lo + batch]
        if batch == 1:
            ev.add(gt=chunk[0][0], pred=chunk[0][1])
        else:
            ev.add(gt=[g for g, _ in chunk], pred=[p for _, p in chunk])
    return ev


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("protocol", ["reference", "strict"])
def test_any_batching_gives_the_commands_numbers_to_the_last_bit(tmp_path, task, protocol):
    cases, stats = _world(tmp_path, task)
    out = tmp_path / "m.json"
    args = ["evaluate", str(tmp_path / "eval_results.pytorch"), "--task", task, "--protocol", protocol]
    assert main([*args, "--stats", str(tmp_path / "stats.h5"), "--jobs", "1", "-o", str(out)]) == 0
    command = json.loads(out.read_text())
    items = [_dicts(c) for c in cases]
    for batch, given in ((1, stats), (7, stats), (len(items), tmp_path / "stats.h5")):  # an object or a path
        ev = _fed(Evaluator(task, stats=given, protocol=protocol), items, batch)
        assert _bits(ev.compute()) == _bits(command["metrics"]), batch
    doc = ev.document()
    assert doc["counts"] == command["counts"] and doc["per_predicate"] == command["per_predicate"]
    assert doc["notes"] == command["notes"]


def test_boxlists_and_the_stats_file_give_the_same_numbers(tmp_path):
    cases, stats = _world(tmp_path, "sgdet")
    lists = eval_results_object(cases)
    ev = Evaluator("sgdet", stats=tmp_path / "stats.h5")
    ev.add(gt=lists["groundtruths"][:30], pred=lists["predictions"][:30])
    for gt, pred in zip(lists["groundtruths"][30:], lists["predictions"][30:]):
        ev.add(gt, pred)
    again = _fed(Evaluator("sgdet", stats=stats), [_dicts(c) for c in cases], 7)
    assert _bits(ev.compute()) == _bits(again.compute())
    assert ev.compute()["det_mAP@50"] is not None  # SGDet's box AP, through the collector


def test_an_xywh_boxlist_is_converted_as_maskrcnn_benchmark_does(tmp_path):
    cases, _ = _world(tmp_path, "sgdet", n=20)
    lists = eval_results_object(cases)
    for b in lists["groundtruths"] + lists["predictions"]:
        b.bbox = np.column_stack([b.bbox[:, :2], b.bbox[:, 2:] - b.bbox[:, :2] + 1])
        b.mode = "xywh"
    ev = Evaluator("sgdet", vocab=VOCAB)
    ev.add(lists["groundtruths"], lists["predictions"])
    plain = _fed(Evaluator("sgdet", vocab=VOCAB), [_dicts(c) for c in cases], 20)
    assert _bits(ev.compute()) == _bits(plain.compute())


@pytest.mark.parametrize("task", TASKS)
def test_merge_of_two_halves_equals_one_pass_to_the_last_bit(tmp_path, task):
    """Cut at a block boundary (32), inside a block (31) and after one image, batched unlike the one pass:
    every count and metric, bit for bit (the engine's sums are exact: arrays.exact_sum)."""
    cases, stats = _world(tmp_path, task)
    items = [_dicts(c) for c in cases]
    one = _fed(Evaluator(task, stats=stats), items, 7).document()
    for cut in (32, 31, 1):
        a = _fed(Evaluator(task, stats=stats), items[:cut], 5)
        a.merge(_fed(Evaluator(task, stats=stats), items[cut:], 9))
        merged = a.document()
        assert merged["counts"] == one["counts"] and a.images == len(items)
        assert _bits(merged["metrics"]) == _bits(one["metrics"]), cut
        assert merged["per_predicate"] == one["per_predicate"]
    with pytest.raises(InputError, match="differ in their options"):
        Evaluator(task, stats=stats).merge(Evaluator(task, stats=stats, tau=0.25))


def test_the_order_of_the_images_changes_no_bit(tmp_path):
    """PredCls has no box AP, whose ties follow the image order: every metric is a reduction of per-image
    values, summed exactly, so shuffled images and shards merged in any order give the same bits."""
    cases, stats = _world(tmp_path, "predcls")
    items = [_dicts(c) for c in cases]
    one = _bits(_fed(Evaluator("predcls", stats=stats), items, 70).compute())
    order = np.random.default_rng(0).permutation(len(items))
    shards = [_fed(Evaluator("predcls", stats=stats), [items[i] for i in order[r::3]], 4) for r in range(3)]
    shards[2].merge(shards[0])
    shards[2].merge(shards[1])
    assert _bits(shards[2].compute()) == one


def test_reset_starts_over_and_compute_can_be_called_midway(tmp_path):
    cases, stats = _world(tmp_path, "predcls")
    items = [_dicts(c) for c in cases]
    ev = _fed(Evaluator("predcls", stats=stats), items[:20], 3)
    midway = ev.compute()
    assert _bits(midway) == _bits(_fed(Evaluator("predcls", stats=stats), items[:20], 20).compute())
    _fed(ev, items[20:], 4)  # computing changed nothing: the rest continues the same evaluation
    assert _bits(ev.compute()) == _bits(_fed(Evaluator("predcls", stats=stats), items, 70).compute())
    ev.reset()
    assert ev.images == 0
    _fed(ev, items[:20], 6)
    assert _bits(ev.compute()) == _bits(midway)


def test_a_bad_image_raises_naming_it_and_its_field_and_adds_nothing(tmp_path):
    cases, stats = _world(tmp_path, "predcls", n=10)
    items = [_dicts(c) for c in cases]
    ev = Evaluator("predcls", stats=stats)
    ev.add(*items[0])
    bad = [dict(p) for _, p in items[1:4]]
    bad[1]["rel_scores"] = bad[1]["rel_scores"][:, :3]  # image 2 of the call, position 2
    with pytest.raises(InputError) as err:
        ev.add([g for g, _ in items[1:4]], bad)
    assert str(err.value).startswith("Evaluator.add (pred): image 2 (#2): field 'rel_scores':"), str(err.value)
    assert ev.images == 1
    nan = dict(items[1][1], scores=np.full_like(items[1][1]["scores"], np.nan))
    with pytest.raises(InputError, match=r"image 1 \(#1\): field 'scores'"):
        ev.add(items[1][0], nan)
    with pytest.raises(InputError, match="unknown key 'relation'"):
        ev.add({"boxes": items[1][0]["boxes"], "labels": items[1][0]["labels"], "relation": []}, items[1][1])
    with pytest.raises(InputError, match=r"field 'relations \(object index\)'"):
        ev.add(dict(items[1][0], relations=np.array([[0, 99, 1]])), items[1][1])
    with pytest.raises(InputError, match="2 ground truths but 1 predictions"):
        ev.add([items[1][0], items[2][0]], [items[1][1]])
    with pytest.raises(InputError, match="not one of"):
        Evaluator("predcls", protocol="nope")
    with pytest.raises(InputError, match="no image was added"):
        Evaluator("predcls", vocab=VOCAB).compute()
    assert ev.images == 1
    _fed(ev, items[1:], 3)  # still usable: the failed calls added nothing
    assert ev.images == 10 and ev.document()["counts"]["images_input"] == 10


def test_a_boxlist_error_names_the_boxlist_field(tmp_path):
    cases, _ = _world(tmp_path, "sgdet", n=3)
    lists = eval_results_object(cases)
    pred = lists["predictions"][0]
    pred.extra_fields["pred_rel_scores"] = pred.extra_fields["pred_rel_scores"][:, :2]
    with pytest.raises(InputError, match="field 'pred_rel_scores'"):
        Evaluator("sgdet", vocab=VOCAB).add(lists["groundtruths"][0], pred)
    del lists["groundtruths"][1].extra_fields["relation_tuple"]
    with pytest.raises(InputError, match="field 'relation_tuple': missing from the BoxList"):
        Evaluator("sgdet", vocab=VOCAB).add(lists["groundtruths"][1], lists["predictions"][1])


def test_torch_tensors_are_taken_as_they_are(tmp_path):
    torch = pytest.importorskip("torch")
    cases, stats = _world(tmp_path, "sgcls", n=40)
    items = [_dicts(c) for c in cases]
    as_tensors = [
        ({k: torch.as_tensor(np.asarray(v)) for k, v in g.items()}, {k: torch.from_numpy(v) for k, v in p.items()})
        for g, p in items
    ]
    as_tensors[0][1]["rel_scores"].requires_grad_(True)  # a tensor still on the graph
    a = _fed(Evaluator("sgcls", stats=stats), as_tensors, 6)
    b = _fed(Evaluator("sgcls", stats=stats), items, 6)
    assert _bits(a.compute()) == _bits(b.compute())


def test_the_package_imports_and_evaluates_without_torch(tmp_path):
    cases, _ = _world(tmp_path, "predcls", n=12)
    np.savez(tmp_path / "case.npz", **{f"{i}_{k}": v for i, c in enumerate(cases) for k, v in _dicts(c)[1].items()})
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import numpy as np, sgg_eval\n"
        f"from sgg_eval.data.types import Vocabulary\n"
        f"v = Vocabulary({VOCAB.object_classes!r}, {VOCAB.predicate_classes!r})\n"
        "ev = sgg_eval.Evaluator('predcls', vocab=v)\n"
        f"from sgg_eval.formats.eval_results import read_eval_results\n"
        f"_, _, pairs = read_eval_results({str(tmp_path / 'eval_results.pytorch')!r}, v)\n"
        "for gt, pred in pairs:\n"
        "    ev.add({'boxes': gt.boxes, 'labels': gt.labels, 'relations': gt.rels},\n"
        "           {'labels': pred.labels, 'scores': pred.obj_scores, 'rel_pairs': pred.pairs,\n"
        "            'rel_scores': pred.rel_scores})\n"
        "assert 'torch' not in [m.split('.')[0] for m in sys.modules if sys.modules[m] is not None]\n"
        "print(ev.compute()['R@50'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert 0.0 <= float(out) <= 1.0


def test_all_lists_the_api_and_evaluate_file_returns_what_the_command_writes(tmp_path):
    printed = subprocess.run(
        [sys.executable, "-c", "import sgg_eval; print(sgg_eval.__all__)"], capture_output=True, text=True, check=True
    ).stdout
    assert (
        printed.strip()
        == "['Evaluator', 'InputError', 'PsgEvaluator', 'SceneGraphMetric', 'VideoEvaluator', 'evaluate_file']"
    )
    assert all(hasattr(sgg_eval, name) for name in sgg_eval.__all__)
    _world(tmp_path, "sgcls")
    path, stats = tmp_path / "eval_results.pytorch", tmp_path / "stats.h5"
    assert main(["evaluate", str(path), "--task", "sgcls", "--stats", str(stats), "-o", str(tmp_path / "m.json")]) == 0
    doc = evaluate_file(path, task="sgcls", stats=stats, jobs=2)
    assert json.dumps(doc, sort_keys=True) == json.dumps(json.loads((tmp_path / "m.json").read_text()), sort_keys=True)
    with pytest.raises(InputError, match="task is required"):
        evaluate_file(path)


def test_the_readme_example_runs_verbatim(tmp_path, monkeypatch):
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("### Python API") :]
    blocks = re.findall(r"```python\n(.*?)```", section[: section.index("\n## ")], flags=re.S)
    assert blocks, "the README's Python API section has no python block"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102 (our own README)
    assert namespace["metrics"]["R@50"] == 1.0 and namespace["metrics"]["mR@50"] == 0.02


def test_the_torchmetrics_adapter_gives_the_evaluators_numbers(tmp_path):
    torch = pytest.importorskip("torchmetrics") and pytest.importorskip("torch")
    from sgg_eval import SceneGraphMetric

    cases, stats = _world(tmp_path, "predcls")
    items = [_dicts(c) for c in cases]
    metric = SceneGraphMetric("predcls", stats=stats, keys=("R@50", "mR@50", "IMR@20", "zR@50"))
    for lo in range(0, len(items), 8):
        metric.update([g for g, _ in items[lo : lo + 8]], [p for _, p in items[lo : lo + 8]])
    got = metric.compute()
    want = _fed(Evaluator("predcls", stats=stats), items, 8).compute()
    assert set(got) == {"R@50", "mR@50", "IMR@20", "zR@50"}
    for name, value in got.items():
        assert value.dtype == torch.float64 and value.item() == want[name], name
    metric.reset()
    assert metric.evaluator.images == 0
    bad = SceneGraphMetric("predcls", stats=stats, keys=("R@7",))
    bad.update([g for g, _ in items], [p for _, p in items])
    with pytest.raises(KeyError, match="'R@7' is not a metric of this run"):
        bad.compute()


def _ddp_rank(rank: int, world: int, folder: str, port: int) -> None:
    """One rank of a 2-process gloo job: its half of the images, then compute (tests below)."""
    import torch.distributed as dist

    from sgg_eval import SceneGraphMetric
    from sgg_eval.data.stats import read_stats

    tuning.BLOCK_IMAGES = 16
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        rng = np.random.default_rng(5)  # the test's images, drawn again (_world)
        items = [_dicts(random_case(rng, VOCAB, "sgdet", i)) for i in range(70)]
        half = len(items) // 2
        mine = items[:half] if rank == 0 else items[half:]
        metric = SceneGraphMetric("sgdet", stats=read_stats(Path(folder) / "stats.h5"), keys=("R@50", "mR@50"))
        for g, p in mine:
            metric.update(g, p)
        out = {k: v.item() for k, v in metric.compute().items()}
        (Path(folder) / f"rank{rank}.json").write_text(json.dumps({k: float(v).hex() for k, v in out.items()}))
    finally:
        dist.destroy_process_group()


def test_under_torch_distributed_every_rank_computes_the_merged_numbers(tmp_path):
    pytest.importorskip("torchmetrics")
    mp = pytest.importorskip("torch.multiprocessing")
    import socket

    cases, stats = _world(tmp_path, "sgdet")
    items = [_dicts(c) for c in cases]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(_ddp_rank, args=(2, str(tmp_path), port), nprocs=2, join=True)
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    want = _fed(Evaluator("sgdet", stats=stats), items, 70).compute()  # one pass over the same images
    assert ranks[0] == ranks[1] == {k: float(want[k]).hex() for k in ("R@50", "mR@50")}


@pytest.mark.parametrize(
    "protocol, task",
    [
        ("oiv6", "sgdet"),
        ("oiv6", "predcls"),
        ("vs3", "sgcls"),
        ("ovsgtr", "sgdet"),
        ("pgsg", "predcls"),
        ("sgg-benchmark", "sgdet"),
        ("sgg-benchmark", "sgcls"),
    ],
)
def test_the_other_protocols_give_the_commands_numbers(tmp_path, monkeypatch, protocol, task):
    """The Open Images V6 and open-vocabulary protocols, on VG150's names (their shipped splits name VG150's
    classes); PGSG's skipped head made short (20 images) on both sides. OvSGTR's and PGSG's commands read an
    unclipped split store only, so their engine is run on the same images instead."""
    from sgg_eval.data.vg150_facts import vg150_vocabulary
    from sgg_eval.metrics import engine

    short_head(monkeypatch, 20)
    vocab = vg150_vocabulary()
    rng = np.random.default_rng(9)
    cases = [random_case(rng, vocab, task, i) for i in range(60)]
    save_legacy(eval_results_object(cases), tmp_path / "eval_results.pytorch")
    if protocol in ("ovsgtr", "pgsg"):  # the command wants an unclipped split store: its engine on the same images
        from sgg_eval.boxes.evaluate import evaluation_setup
        from sgg_eval.metrics.longtail import add_group_recalls

        setup = evaluation_setup(vocab, task, protocol=protocol)
        command = engine.evaluate(iter(cases), vocab, setup.opts, source="x")
        command = add_group_recalls(command, vocab.predicate_classes, setup.groups, setup.used)
    else:
        command = evaluate_file(tmp_path / "eval_results.pytorch", task=task, protocol=protocol)
    items = [_dicts(c) for c in cases]
    for batch in (1, 7):
        ev = _fed(Evaluator(task, protocol=protocol), items, batch)
        doc = ev.document()
        assert _bits(doc["metrics"]) == _bits(command["metrics"]), batch
        assert doc["counts"] == command["counts"]
    if protocol != "pgsg":  # pgsg's skipped head belongs to one stream: merge refuses it
        halves = _fed(Evaluator(task, protocol=protocol), items[:23], 6)
        halves.merge(_fed(Evaluator(task, protocol=protocol), items[23:], 5))
        assert _bits(halves.compute()) == _bits(command["metrics"])


def test_gt_past_the_border_is_clipped_only_where_the_image_size_is_given():
    """As the command clips a file's own GT under a protocol whose loader clips: a box past the border of a GT with
    its ``image_size`` is clipped (and counted), one without a size is taken as given (there is no border to clip
    to); ``vs3`` clips as the reference does (``ovsgtr`` and ``pgsg`` never do: ``test_protocol_registry``)."""
    gt = {"boxes": np.array([[0, 0, 10, 10], [5, 5, 30, 12]], np.float32), "labels": np.array([1, 2]),
          "relations": np.array([[0, 1, 1]])}  # fmt: skip
    pred = {"labels": np.array([1, 2]), "scores": np.ones(2, np.float32), "rel_pairs": np.array([[0, 1]]),
            "rel_scores": np.eye(1, 51, 1, dtype=np.float32)}  # fmt: skip
    sized = {**gt, "image_size": (20, 20)}
    counts = {}
    cases = (("sized", sized, "reference"), ("unsized", gt, "reference"), ("vs3", sized, "vs3"))
    for name, g, protocol in cases:
        ev = Evaluator("predcls", protocol=protocol)
        ev.add(g, {**pred, "boxes": g["boxes"]})
        counts[name] = ev.document()["counts"].get("gt_boxes_clipped")
    assert counts == {"sized": 1, "unsized": 0, "vs3": 1}
