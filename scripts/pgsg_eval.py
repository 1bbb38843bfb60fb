"""PGSG's (Pix2Grp's) own open-vocabulary evaluation, run in a Python that has torch (never this project's
environment), for `make bench` and for checking sgg-eval against it (docs/openvocab.md):

    PY scripts/pgsg_eval.py PIX2GRP_DIR VG150_DIR predictions.npz ZEROSHOT OUT.json

PIX2GRP_DIR is a checkout of SHTUPLUS/Pix2Grp_CVPR2024 (tested at cff7420). Its evaluation modules load unmodified
(``lavis/tasks/evaluation/{sgg_vg_eval,vg_sgg_eval_tools,boxlist,comm}.py``; the ``lavis`` package ``__init__``
files, which import the models, are skipped). ``classic_vg_sgg_evaluation`` runs on the test images of VG150_DIR's
h5 (key ``split``) from the 5,001st on (its loader's ``image_index[5000:]``), with its ``zs_predicate`` list from
``rel_det_vg_pgsg_eval_ov.yaml`` (below) and everything 0-based as its loader makes it. The GT boxes are as its
``VGVRDEvalDataset.__getitem__`` makes them, ``boxes_1024 / 1024 × max(w, h)`` and never clipped (its
``clip_to_image`` is never called); the float rounding of its image transforms, there and back, is not
reproduced. Predictions become PGSG's fields: ``pred_rel_label`` the argmax predicate (0-based), ``pred_rel_dist``
the 50 predicate scores, ``pred_rel_score`` their maximum, rows in the file's order. Its novel and seen mR are
computed in a closure whose result it only logs (4 digits), so the per-predicate recall list of its
``SGMeanRecall`` is kept when ``calculate_mean_recall`` runs and the closure's two means are taken of it as it
takes them (``np.mean`` over the novel and the other predicates). ``Tensor.cuda`` returns the tensor itself (its
box IoU moves boxes to a GPU). OUT.json gets R@K, mR@K, mR_novel@K, mR_seen@K
at K = 20 … 300 under sgg-eval's names, the image counts, and the seconds it took.
"""

import json
import logging
import os
import sys
import time
import types

T0 = time.perf_counter()
SRC, VG, PREDICTIONS, ZEROSHOT, OUT = sys.argv[1:6]
sys.path.insert(0, SRC)
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path += [os.path.join(_HERE, "..", "src"), os.path.join(_HERE, "..", "tests")]  # after the codebase's modules
for _name in ("lavis", "lavis.tasks", "lavis.tasks.evaluation"):
    _m = types.ModuleType(_name)
    _m.__path__ = [os.path.join(SRC, _name.replace(".", "/"))]
    sys.modules[_name] = _m
logging.disable(logging.INFO)

import numpy as np  # noqa: E402
import torch  # noqa: E402
from lavis.tasks.evaluation import sgg_vg_eval  # noqa: E402
from lavis.tasks.evaluation import vg_sgg_eval_tools as tools  # noqa: E402
from lavis.tasks.evaluation.boxlist import BoxList  # noqa: E402
from openvocab_fixture import read_plain  # noqa: E402  (the predictions the fixture wrote)

from sgg_eval.data.vg150 import VG150, VG150Files  # noqa: E402  (its h5 reading; unclipped as PGSG's loader)

SKIP = 5000  # VGVRDEvalDataset: image_index[5000:] for every split but val
# rel_det_vg_pgsg_eval_ov.yaml run.zeroshot_cfg.zs_predicate (0-based)
ZS_PREDICATE = [0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 14, 16, 18, 20, 22, 23, 25, 26, 27, 31, 34, 35, 36, 40, 41, 42,
                44, 48]  # fmt: skip
KS = (20, 50, 100, 200, 300)

kept = []
_calculate = tools.SGMeanRecall.calculate_mean_recall


def _keep(self, mode):
    _calculate(self, mode)
    if mode == "sgdet":
        kept.append(self)


tools.SGMeanRecall.calculate_mean_recall = _keep
torch.Tensor.cuda = lambda self, *a, **k: self  # its box IoU moves boxes to the GPU; this machine has none
sgg_vg_eval.SGMeanRecall = tools.SGMeanRecall

meta, _, images = VG150("vg150", VG150Files.in_dir(VG), clip_boxes=False).open_split("test")
vocab = meta.vocab
preds = read_plain(PREDICTIONS)
gts, boxlists, no_pred = [], [], 0
for position, (gt, p) in enumerate(zip(images, preds)):
    assert gt.image_id == p["image_id"], "predictions are not for these images"
    if position < SKIP:
        continue
    size = (gt.width, gt.height)
    g = BoxList(torch.tensor(gt.boxes), size, "xyxy")
    g.add_field("labels", torch.tensor(gt.labels - 1))
    g.add_field("relation_tuple", torch.tensor(gt.rels - np.array([0, 0, 1])))
    probs = np.array(p["probs"], dtype=np.float32).reshape(-1, 51)
    b = BoxList(torch.tensor(p["boxes"], dtype=torch.float32).reshape(-1, 4), size, "xyxy")
    b.add_field("pred_labels", torch.tensor(np.array(p["labels"], dtype=np.int64) - 1))
    b.add_field("pred_scores", torch.tensor(p["scores"], dtype=torch.float32))
    b.add_field("rel_pair_idxs", torch.tensor(p["pairs"], dtype=torch.int64).reshape(-1, 2))
    b.add_field("pred_rel_dist", torch.tensor(probs[:, 1:]))
    b.add_field("pred_rel_score", torch.tensor(probs[:, 1:].max(axis=1) if len(probs) else np.zeros(0, np.float32)))
    b.add_field("pred_rel_label", torch.tensor(probs[:, 1:].argmax(axis=1) if len(probs) else np.zeros(0, np.int64)))
    gts.append(g)
    boxlists.append(b)
    no_pred += len(gt.rels) > 0 and len(p["pairs"]) == 0
_, result = sgg_vg_eval.classic_vg_sgg_evaluation(
    boxlists, gts, list(vocab.object_classes), list(vocab.predicate_classes), ZEROSHOT, ZS_PREDICATE
)
per_c = kept[0].result_dict["sgdet_mean_recall_list"]
novel = set(ZS_PREDICATE)
values = {}
for k in KS:
    values[f"R@{k}"] = float(result[f"sgdet_recall/top{k}"])
    values[f"mR@{k}"] = float(result[f"sgdet_mean_recall/top{k}"])
    values[f"mR_novel@{k}"] = float(np.mean([r for i, r in enumerate(per_c[k]) if i in novel]))
    values[f"mR_seen@{k}"] = float(np.mean([r for i, r in enumerate(per_c[k]) if i not in novel]))
counts = {
    "images_input": len(gts),
    "images_evaluated": len(kept[0].result_dict["sgdet_recall"][20]),
    "images_skipped_no_pred": no_pred,
    "images_not_evaluated_by_protocol": SKIP,
}
json.dump({"metrics": values, "counts": counts, "seconds": time.perf_counter() - T0}, open(OUT, "w"), indent=1)
