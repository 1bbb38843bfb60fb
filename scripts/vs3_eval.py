"""VS3's own open-vocabulary evaluation, run in a Python that has torch (never this project's environment), for `make
bench` and for checking sgg-eval against it (docs/openvocab.md):

    PY scripts/vs3_eval.py VS3_DIR VG150_DIR predictions.npz ZEROSHOT OUT.json

VS3_DIR is a checkout of zyong812/VS3_CVPR23 (tested at 2561388). Its loader and evaluator modules load unmodified
(``maskrcnn_benchmark/data/datasets/visual_genome150.py``, ``.../evaluation/vg150/{vg_eval,sgg_eval}.py``,
``maskrcnn_benchmark/structures/``, ``utils/miscellaneous.py``); the package ``__init__`` files (they import the
model and compiled layers) are skipped and the modules the evaluation never calls (compiled NMS, the grounding
converters, the tokenizer's word map, the distributed helpers) are stand-ins. The GT comes from VS3's
``load_graphs`` on VG150_DIR's h5 (key ``split_GLIPunseen``, as ``configs/vg150/finetune.yaml``) and
``VG150Dataset.get_groundtruth(evaluation=True)`` (boxes clipped to the image); each image goes through
``evaluate_relation_of_one_image`` with the evaluators ``do_vg_evaluation`` builds in sgdet mode, its
``SGZeroShotRecall`` being VS3's novel-object recall. predictions.npz holds per image ``boxes``, ``labels``
(1-based), ``scores``, ``pairs``, ``probs`` (``[P, 51]``). ZEROSHOT is the zero-shot triplet file of its ng-zR.
OUT.json gets every value it prints, under sgg-eval's names, the image counts, and the seconds it took.
"""

import json
import os
import sys
import time
import types

T0 = time.perf_counter()
SRC, VG, PREDICTIONS, ZEROSHOT, OUT = sys.argv[1:6]
sys.path.insert(0, SRC)
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path += [os.path.join(_HERE, "..", "src"), os.path.join(_HERE, "..", "tests")]  # after the codebase's modules


def _module(name, path=None, **attrs):
    module = types.ModuleType(name)
    if path is not None:
        module.__path__ = [os.path.join(SRC, path)]
    module.__dict__.update(attrs)
    sys.modules[name] = module


for _name in ("maskrcnn_benchmark", "maskrcnn_benchmark.data", "maskrcnn_benchmark.data.datasets",
              "maskrcnn_benchmark.data.datasets.evaluation", "maskrcnn_benchmark.data.datasets.evaluation.vg150",
              "maskrcnn_benchmark.structures", "maskrcnn_benchmark.utils"):  # fmt: skip
    _module(_name, _name.replace(".", "/"))
_module("maskrcnn_benchmark.layers", nms=None, ml_nms=None)  # compiled: the evaluation never calls them
_module("maskrcnn_benchmark.utils.comm", is_main_process=lambda: True)
_module("maskrcnn_benchmark.data.preprocess_utils", object_word_map={})
_module("maskrcnn_benchmark.data.datasets.od_to_grounding", convert_od_to_grounding_simple=None,
        convert_od_to_grounding_with_pseudo_triplet_caption=None)  # fmt: skip
_module("maskrcnn_benchmark.data.datasets.modulated_coco", create_positive_map=None,
        create_positive_map_for_od_labels=None, create_greenlight_map=None)  # fmt: skip

import numpy as np  # noqa: E402
import torch  # noqa: E402
from maskrcnn_benchmark.data.datasets.evaluation.vg150 import sgg_eval as E  # noqa: E402
from maskrcnn_benchmark.data.datasets.evaluation.vg150.vg_eval import evaluate_relation_of_one_image  # noqa: E402
from maskrcnn_benchmark.data.datasets.visual_genome150 import VG150Dataset, load_graphs  # noqa: E402
from maskrcnn_benchmark.structures.bounding_box import BoxList  # noqa: E402
from openvocab_fixture import read_plain  # noqa: E402  (the predictions the fixture wrote)

KEY, MODE = "split_GLIPunseen", "sgdet"
dicts = json.load(open(os.path.join(VG, "VG-SGG-dicts-with-attri.json")))
predicates = ["__background__"] + sorted(dicts["predicate_to_idx"], key=dicts["predicate_to_idx"].get)
split_mask, boxes, classes, attributes, relationships = load_graphs(
    os.path.join(VG, "VG-SGG-with-attri.h5"), "test", -1, num_val_im=5000, filter_empty_rels=True,
    filter_non_overlap=False, split_key=KEY)[:5]  # fmt: skip
info = [im for im in json.load(open(os.path.join(VG, "image_data.json")))
        if f"{im['image_id']}.jpg" not in ("1592.jpg", "1722.jpg", "4616.jpg", "4617.jpg")]  # fmt: skip
info = [info[i] for i in np.flatnonzero(split_mask)]
ds = types.SimpleNamespace(split="test", train_with_grounding_boxes=False, filter_duplicate_rels=False,
                           gt_boxes=boxes, gt_classes=classes, gt_attributes=attributes,
                           relationships=relationships, get_img_info=lambda i: info[i])  # fmt: skip
preds = read_plain(PREDICTIONS)
assert [p["image_id"] for p in preds] == [im["image_id"] for im in info], "predictions are not for these images"

result_dict = {}
evaluator = {
    "eval_recall": E.SGRecall(result_dict),
    "eval_nog_recall": E.SGNoGraphConstraintRecall(result_dict),
    "eval_zeroshot_recall": E.SGZeroShotRecall(result_dict),
    "eval_ng_zeroshot_recall": E.SGNGZeroShotRecall(result_dict),
    "eval_pair_accuracy": E.SGPairAccuracy(result_dict),
    "eval_mean_recall": E.SGMeanRecall(result_dict, len(predicates), predicates, print_detail=True),
    "eval_ng_mean_recall": E.SGNGMeanRecall(result_dict, len(predicates), predicates, print_detail=True),
}
for ev in evaluator.values():
    ev.register_container(MODE)
container = {
    "zeroshot_triplet": torch.load(ZEROSHOT, map_location="cpu").long().numpy(),
    "result_dict": result_dict,
    "mode": MODE,
    "multiple_preds": False,
    "num_rel_category": len(predicates),
    "iou_thres": 0.5,
    "attribute_on": False,
    "num_attributes": 201,
}
no_pred = no_gt = clipped = 0
for index, p in enumerate(preds):
    gt = VG150Dataset.get_groundtruth(ds, index, evaluation=True)
    clipped += int((gt.bbox.numpy() != (boxes[index] / 1024 * max(info[index]["width"], info[index]["height"]))
                    .astype(np.float32)).any(axis=1).sum())  # fmt: skip
    no_gt += len(relationships[index]) == 0
    no_pred += len(relationships[index]) > 0 and len(p["pairs"]) == 0
    w, h = info[index]["width"], info[index]["height"]
    prediction = BoxList(torch.tensor(p["boxes"], dtype=torch.float32).reshape(-1, 4), (w, h), "xyxy")
    prediction.add_field("pred_labels", torch.tensor(p["labels"], dtype=torch.int64))
    prediction.add_field("pred_scores", torch.tensor(p["scores"], dtype=torch.float32))
    prediction.add_field("rel_pair_idxs", torch.tensor(p["pairs"], dtype=torch.int64).reshape(-1, 2))
    prediction.add_field("pred_rel_scores", torch.tensor(p["probs"], dtype=torch.float32).reshape(-1, 51))
    evaluate_relation_of_one_image(gt, prediction, container, evaluator)
evaluator["eval_mean_recall"].calculate_mean_recall(MODE)
evaluator["eval_ng_mean_recall"].calculate_mean_recall(MODE)

values = {}
names = {"recall": "R@{}", "recall_nogc": "ngR@{}", "zeroshot_recall": "R_novel_obj@{}",
         "ng_zeroshot_recall": "ng-zR@{}"}  # fmt: skip
for key, name in names.items():
    for k, v in result_dict[f"{MODE}_{key}"].items():
        values[name.format(k)] = float(np.mean(v)) if len(v) else None
for k in (20, 50, 100):
    values[f"mR@{k}"] = float(result_dict[f"{MODE}_mean_recall"][k])
    values[f"ng-mR@{k}"] = float(result_dict[f"{MODE}_ng_mean_recall"][k])
counts = {
    "images_input": len(preds),
    "images_evaluated": len(result_dict[f"{MODE}_recall"][20]),
    "images_skipped_no_gt": no_gt,
    "images_skipped_no_pred": no_pred,
    "gt_boxes_clipped": clipped,
}
json.dump({"metrics": values, "counts": counts, "seconds": time.perf_counter() - T0}, open(OUT, "w"), indent=1)
