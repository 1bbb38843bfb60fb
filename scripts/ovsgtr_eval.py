"""OvSGTR's own open-vocabulary evaluation, run in a Python that has torch (never this project's environment), for
`make bench` and for checking sgg-eval against it (docs/openvocab.md):

    PY scripts/ovsgtr_eval.py OVSGTR_DIR VG150_DIR predictions.npz SETTING ZEROSHOT OUT.json

OVSGTR_DIR is a checkout of gpt4vision/OvSGTR (tested at 91afa5b). Its loader and evaluator modules load unmodified
(``datasets/vg.py``, ``datasets/sgg_eval.py``, ``datasets/sgg_metrics.py``); only ``torchvision`` (its version
string and ``box_area``, one line) and ``datasets/coco.py`` (image transforms, never called) are stand-ins, and the
``datasets`` package's ``__init__`` (it imports every dataset) is skipped. The GT comes from OvSGTR's
``load_graphs`` on VG150_DIR's h5 (key ``split_GLIPunseen``, as every OvSGTR config) and
``VGDataset.get_groundtruth`` (the cut to 100 boxes after ``np.random.seed(0)``, the documented seed of sgg-eval;
the merge of same-class boxes), image sizes from ``image_data.json``; each image goes through
``evaluate_relation_of_one_image`` with the evaluators ``SggEvaluator.get_sgg_evaluator`` builds in sgdet mode for
SETTING (ovd, ovr, ovd+r). An image without a predicted pair, which makes OvSGTR's threaded wrapper raise, is
counted and skipped as its evaluator would without the wrapper. predictions.npz holds per image ``boxes``,
``labels`` (1-based), ``scores``, ``pairs``, ``probs`` (``[P, 51]``). ZEROSHOT is the zero-shot triplet file
(Scene-Graph-Benchmark's), for its classic zR. OUT.json gets every value it prints, under sgg-eval's names, the
image counts, and the seconds it took.
"""

import json
import os
import sys
import time
import types

T0 = time.perf_counter()
SRC, VG, PREDICTIONS, SETTING, ZEROSHOT, OUT = sys.argv[1:7]
sys.path.insert(0, SRC)
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path += [os.path.join(_HERE, "..", "src"), os.path.join(_HERE, "..", "tests")]  # after the codebase's modules
# torchvision: misc.py reads its version; box_ops.py imports box_area, torchvision's (x2 - x1) * (y2 - y1) (its
# wheels need a matching torch build; the one line is its definition)
sys.modules["torchvision"] = types.SimpleNamespace(__version__="0.20.0")
sys.modules["torchvision.ops"] = types.ModuleType("torchvision.ops")
sys.modules["torchvision.ops.boxes"] = types.SimpleNamespace(
    box_area=lambda b: (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
)
_datasets = types.ModuleType("datasets")
_datasets.__path__ = [os.path.join(SRC, "datasets")]
sys.modules["datasets"] = _datasets
sys.modules["datasets.coco"] = types.SimpleNamespace(make_coco_transforms=None)

import h5py  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from datasets.sgg_eval import SggEvaluator, evaluate_relation_of_one_image  # noqa: E402
from datasets.vg import VGDataset, load_graphs, load_info  # noqa: E402
from openvocab_fixture import read_plain  # noqa: E402  (the predictions the fixture wrote)

KEY = "split_GLIPunseen"
ind_to_classes, ind_to_predicates, _ = load_info(os.path.join(VG, "VG-SGG-dicts-with-attri.json"))
with h5py.File(os.path.join(VG, "VG-SGG-with-attri.h5")) as h5:
    n_rows = len(h5[KEY])
split_mask, boxes, classes, _, relationships, _, _ = load_graphs(
    os.path.join(VG, "VG-SGG-with-attri.h5"), "test", -1, num_val_im=5000, filter_empty_rels=True,
    filter_non_overlap=False, roidb_key=KEY)  # fmt: skip
info = [im for im in json.load(open(os.path.join(VG, "image_data.json")))
        if f"{im['image_id']}.jpg" not in ("1592.jpg", "1722.jpg", "4616.jpg", "4617.jpg")]  # fmt: skip
assert len(info) == n_rows
info = [info[i] for i in np.flatnonzero(split_mask)]
ds = types.SimpleNamespace(
    num_obj=100,
    images=info,
    annotations=[{"boxes": b, "labels": c, "edges": r} for b, c, r in zip(boxes, classes, relationships)],
)
preds = read_plain(PREDICTIONS)
assert [p["image_id"] for p in preds] == [im["image_id"] for im in info], "predictions are not for these images"

owner = types.SimpleNamespace(
    ovd_enabled="ovd" in SETTING,
    ovr_enabled=SETTING in ("ovr", "ovd+r"),
    num_rel_category=len(ind_to_predicates),
    dataset=types.SimpleNamespace(ind_to_predicates=ind_to_predicates),
)
result_dict, evaluator = SggEvaluator.get_sgg_evaluator(owner, "sgdet")
container = {
    "zeroshot_triplet": torch.load(ZEROSHOT, map_location="cpu").long().numpy(),
    "result_dict": result_dict,
    "mode": "sgdet",
    "multiple_preds": False,
    "num_rel_category": len(ind_to_predicates),
    "iou_thres": 0.5,
}
no_pred = no_gt = capped = merged = 0
for index, p in enumerate(preds):
    np.random.seed(0)
    n_before = len(ds.annotations[index]["boxes"])
    gt_boxes, gt_labels, gt_edges = VGDataset.get_groundtruth(ds, index)
    capped += n_before > 100
    merged += min(n_before, 100) - len(gt_boxes)
    no_gt += len(gt_edges) == 0
    no_pred += len(gt_edges) > 0 and len(p["pairs"]) == 0
    prediction = {
        "pred_boxes": torch.tensor(p["boxes"], dtype=torch.float32).reshape(-1, 4),
        "pred_boxes_class": torch.tensor(p["labels"], dtype=torch.int64),
        "pred_boxes_score": torch.tensor(p["scores"], dtype=torch.float32),
        "all_node_pairs": torch.tensor(p["pairs"], dtype=torch.int64).reshape(-1, 2),
        "all_relation": torch.tensor(p["probs"], dtype=torch.float32).reshape(-1, 51),
    }
    evaluate_relation_of_one_image({"boxes": gt_boxes, "labels": gt_labels, "edges": gt_edges}, prediction,
                                   container, evaluator)  # fmt: skip
evaluator["eval_mean_recall"].calculate_mean_recall("sgdet")
evaluator["eval_ng_mean_recall"].calculate_mean_recall("sgdet")

values = {}
names = {"recall": "R@{}", "recall_nogc": "ngR@{}", "zeroshot_recall": "zR@{}", "ng_zeroshot_recall": "ng-zR@{}",
         "ovd_zeroshot_recall": "R_novel_obj@{}", "ovr_zeroshot_recall": "R_novel_rel@{}"}  # fmt: skip
for key, name in names.items():
    for k, v in result_dict.get(f"sgdet_{key}", {}).items():
        values[name.format(k)] = float(np.mean(v)) if len(v) else None
for k in (20, 50, 100):
    values[f"mR@{k}"] = float(result_dict["sgdet_mean_recall"][k])
    values[f"ng-mR@{k}"] = float(result_dict["sgdet_ng_mean_recall"][k])
counts = {
    "images_input": len(preds),
    "images_evaluated": len(result_dict["sgdet_recall"][20]),
    "images_skipped_no_gt": no_gt,
    "images_skipped_no_pred": no_pred,
    "gt_images_capped": capped,
    "gt_boxes_merged": merged,
}
json.dump({"metrics": values, "counts": counts, "seconds": time.perf_counter() - T0}, open(OUT, "w"), indent=1)
