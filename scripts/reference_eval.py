"""Time Scene-Graph-Benchmark.pytorch's own evaluator on an ``eval_results.pytorch`` file (``make bench``'s
``--reference``): load the file with ``torch.load`` and run its seven relation metrics (R, ngR, zR, ng-zR,
A, mR, ng-mR) image by image, exactly as its ``do_vg_evaluation`` does after saving the file.

    PYTHON_WITH_TORCH scripts/reference_eval.py CHECKOUT FILE TASK ZEROSHOT [IOU]

IOU is the reference's ``cfg.TEST.RELATION.IOU_THRESHOLD`` (default 0.5, its own default).

CHECKOUT is the user's clone of the reference codebase; nothing of it is copied or built. Its evaluation
modules are loaded from their files. The imports they make but the relation metrics never call (the compiled
NMS, the dataset statistics, pycocotools for the box mAP) are replaced by empty modules, so no compiled
extension is needed. Prints one JSON line: the seconds (load + evaluation) and the metrics as fractions.
This script is run by a Python that has torch; sgg-eval itself never imports it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
import types


def _stub(name: str, **attrs) -> None:
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    sys.modules[name] = module


def _load(checkout: str, dotted: str):
    spec = importlib.util.spec_from_file_location(dotted, os.path.join(checkout, *dotted.split(".")) + ".py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[dotted] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    checkout, path, mode, zeroshot_path = sys.argv[1:5]
    iou_thres = float(sys.argv[5]) if len(sys.argv) > 5 else 0.5
    sys.path.insert(0, checkout)  # BoxList must unpickle from maskrcnn_benchmark.structures.bounding_box
    _stub("maskrcnn_benchmark.layers", nms=None)
    _stub("maskrcnn_benchmark.data", get_dataset_statistics=None)
    _stub("pycocotools")
    _stub("pycocotools.coco", COCO=None)
    _stub("pycocotools.cocoeval", COCOeval=None)
    _stub("tqdm", tqdm=lambda x, *a, **k: x)
    import numpy as np
    import torch

    base = "maskrcnn_benchmark.data.datasets.evaluation.vg"
    sgg = _load(checkout, f"{base}.sgg_eval")
    vg = _load(checkout, f"{base}.vg_eval")
    names = [f"p{i}" for i in range(51)]

    start = time.perf_counter()
    # The reference reads its own (trusted) output file; weights_only=False is its torch 1.4 behaviour.
    results = torch.load(path, map_location="cpu", weights_only=False)
    result_dict: dict = {}
    evaluators = {
        "eval_recall": sgg.SGRecall(result_dict),
        "eval_nog_recall": sgg.SGNoGraphConstraintRecall(result_dict),
        "eval_zeroshot_recall": sgg.SGZeroShotRecall(result_dict),
        "eval_ng_zeroshot_recall": sgg.SGNGZeroShotRecall(result_dict),
        "eval_pair_accuracy": sgg.SGPairAccuracy(result_dict),
        "eval_mean_recall": sgg.SGMeanRecall(result_dict, 51, names, print_detail=True),
        "eval_ng_mean_recall": sgg.SGNGMeanRecall(result_dict, 51, names, print_detail=True),
    }
    for evaluator in evaluators.values():
        evaluator.register_container(mode)
    container = {
        "zeroshot_triplet": torch.load(zeroshot_path, map_location="cpu").long().numpy(),
        "result_dict": result_dict,
        "mode": mode,
        "multiple_preds": False,
        "num_rel_category": 51,
        "iou_thres": iou_thres,
        "attribute_on": False,
        "num_attributes": 0,
    }
    for gt, pred in zip(results["groundtruths"], results["predictions"]):
        vg.evaluate_relation_of_one_image(gt, pred, container, evaluators)
    evaluators["eval_mean_recall"].calculate_mean_recall(mode)
    evaluators["eval_ng_mean_recall"].calculate_mean_recall(mode)
    for evaluator in evaluators.values():
        evaluator.generate_print_string(mode)
    seconds = time.perf_counter() - start

    metrics = {}
    for k in (20, 50, 100):
        metrics[f"R@{k}"] = float(np.mean(result_dict[f"{mode}_recall"][k]))
        metrics[f"ngR@{k}"] = float(np.mean(result_dict[f"{mode}_recall_nogc"][k]))
        metrics[f"zR@{k}"] = float(np.mean(result_dict[f"{mode}_zeroshot_recall"][k]))
        metrics[f"ng-zR@{k}"] = float(np.mean(result_dict[f"{mode}_ng_zeroshot_recall"][k]))
        metrics[f"mR@{k}"] = float(result_dict[f"{mode}_mean_recall"][k])
        metrics[f"ng-mR@{k}"] = float(result_dict[f"{mode}_ng_mean_recall"][k])
        if mode != "sgdet":
            hits = np.sum(result_dict[f"{mode}_accuracy_hit"][k])
            metrics[f"A@{k}"] = float(hits / np.sum(result_dict[f"{mode}_accuracy_count"][k]))
    print(json.dumps({"seconds": seconds, "metrics": metrics}))


if __name__ == "__main__":
    main()
