"""PySGG's own Open Images V6 evaluation, run in a Python that has torch and PySGG's requirements (never this
project's environment), for `make bench` and for checking sgg-eval against it (docs/oiv6.md):

    PY scripts/pysgg_oi_eval.py PYSGG_DIR ANNOTATIONS_DIR eval_results.pytorch TASK OUT.json

PYSGG_DIR is a checkout of SHTUPLUS/PySGG (tested at a63942a). Its evaluation modules are loaded unmodified;
only package ``__init__`` files that import compiled extensions or the training code are replaced by empty
packages (their real submodules load), and numpy's ``argsort`` is made stable in this process, so that tied
scores are ranked in the natural order sgg-eval documents (PySGG's own order is machine-dependent). It builds
PySGG's ``OIDataset`` for the test split, ``torch.load``s the predictions and calls ``oi_evaluation``; OUT.json
gets every value it prints or returns, under sgg-eval's names, and the seconds it took.
"""

import json
import logging
import os
import sys
import time
import types

T0 = time.perf_counter()
SRC, ANN, PREDICTIONS, TASK, OUT = sys.argv[1:6]
sys.path.insert(0, SRC)


def _package(name, path=None, **attrs):
    module = types.ModuleType(name)
    if path is not None:
        module.__path__ = [os.path.join(SRC, path)]
    module.__dict__.update(attrs)
    sys.modules[name] = module


for _name in ("pysgg", "pysgg.data", "pysgg.data.datasets", "pysgg.data.datasets.evaluation", "pysgg.modeling",
              "pysgg.modeling.roi_heads", "pysgg.modeling.roi_heads.mask_head"):  # fmt: skip
    _package(_name, _name.replace(".", "/"))
_package("pysgg.layers", nms=None)  # compiled NMS: the evaluation never calls it
_package("pysgg.modeling.roi_heads.mask_head.inference", Masker=object)
_package("pysgg.data.datasets.visual_genome", HEAD=[], BODY=[], TAIL=[], resampling_dict_generation=None,
         get_VG_statistics=None, apply_resampling=None)  # fmt: skip

import numpy as np  # noqa: E402
import torch  # noqa: E402

_argsort = np.argsort
np.argsort = lambda a, axis=-1, kind=None, order=None, **kw: _argsort(a, axis=axis, kind=kind or "stable", order=order)

import pysgg.data.datasets.evaluation.oi as oi  # noqa: E402
from pysgg.config import cfg  # noqa: E402
from pysgg.data.datasets.open_image import OIDataset  # noqa: E402

cfg.MODEL.RELATION_ON = True
cfg.MODEL.ROI_RELATION_HEAD.USE_GT_BOX = TASK in ("predcls", "sgcls")
cfg.MODEL.ROI_RELATION_HEAD.USE_GT_OBJECT_LABEL = TASK == "predcls"
dataset = OIDataset("test", "", os.path.join(ANN, "vrd-test-anno.json"), os.path.join(ANN, "categories_dict.json"))
predictions = torch.load(PREDICTIONS, weights_only=False)["predictions"]
seen = {"ap": []}


def _watch(frame, event, arg):  # the values PySGG's functions return, read as they return them
    if event != "return":
        return
    if frame.f_code.co_name == "ap_eval" and frame.f_code.co_filename.endswith("ap_eval_rel.py"):
        seen["ap"].append(float(arg[2]))
    elif frame.f_code.co_name == "eval_rel_results":
        seen["recalls"] = dict(frame.f_locals["recalls"])
        seen["per_image"] = dict(frame.f_locals["recalls_per_img"])


logging.basicConfig(level=logging.ERROR)
sys.setprofile(_watch)
score, logged = oi.oi_evaluation(cfg, dataset, predictions, None, logging.getLogger("pysgg"), iou_types=())
sys.setprofile(None)
values = {f"R@{k}": float(v) for k, v in seen["recalls"].items()}
values.update({f"R_per_image@{k}": float(v) for k, v in seen["per_image"].items()})
oi_dict = logged[-1]
for ours, theirs in (("mAP_rel", "mAP_rel"), ("wmAP_rel", "wmAP_rel"), ("mAP_phr", "mAP_phr"),
                     ("wmAP_phr", "wmAP_phr"), ("score", "final_score"), ("score_wtd", "w_final_score")):  # fmt: skip
    values[ours] = float(oi_dict[theirs])
classic = {k: float(v) for d in logged[:-1] for k, v in d.items()}
for k in (20, 50, 100):
    values[f"R_classic@{k}"] = classic[f"{TASK}_recall/top{k}"]
    values[f"ngR@{k}"] = classic[f"{TASK}_recall_nogc/top{k}"]
    values[f"mR@{k}"] = classic[f"{TASK}_mean_recall/top{k}"]
names = dataset.ind_to_predicates[1:]
aps = {"AP_rel": dict(zip(names, seen["ap"][: len(names)])), "AP_phr": dict(zip(names, seen["ap"][len(names) :]))}
with open(OUT, "w") as fh:
    json.dump({"metrics": values, **aps, "seconds": time.perf_counter() - T0}, fh)
