"""STTran's own Action Genome evaluation on a model's saved per-video predictions, as its ``test.py`` runs it minus
the model: its loader (``AG(mode="test", ...)``) and its three ``BasicSceneGraphEvaluator``s (with, semi 0.9,
no), every video through all three. Run in a Python with torch and h5py (never this project's), from a checkout
of ``yrcong/STTran`` whose ``lib/fpn/box_intersections_cpu`` is built; sgg-eval's bench and docs call it.

    python scripts/sttran_eval.py STTRAN_CHECKOUT AG_ROOT SMALL_BOX_PKL TASK PRED_DIR OUT.json

PRED_DIR holds ``<video>.npz`` (sgg-eval's generated predictions). The loader's image imports, which only its
``__getitem__`` uses, are stand-ins; nothing that scores is touched. Writes ``{constraint: {R@K: value}}`` with
full precision, and the seconds the loader and the evaluation took."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
import types

import numpy as np
import torch

checkout, root, small_boxes, task, pred_dir, out = sys.argv[1:]
sys.path.insert(0, checkout)
for name in ("scipy", "scipy.misc", "fasterRCNN", "fasterRCNN.lib", "fasterRCNN.lib.model",
             "fasterRCNN.lib.model.utils", "fasterRCNN.lib.model.utils.blob", "torchvision",
             "torchvision.transforms", "PIL", "PIL.Image", "dill"):  # fmt: skip
    sys.modules.setdefault(name, types.ModuleType(name))
sys.modules["scipy.misc"].imread = None
sys.modules["fasterRCNN.lib.model.utils.blob"].prep_im_for_blob = None
sys.modules["fasterRCNN.lib.model.utils.blob"].im_list_to_blob = None
for n in ("Resize", "Compose", "ToTensor", "Normalize"):
    setattr(sys.modules["torchvision.transforms"], n, None)
sys.modules["PIL"].Image = sys.modules["PIL.Image"]

from dataloader.action_genome import AG  # noqa: E402
from lib.evaluation_recall import BasicSceneGraphEvaluator  # noqa: E402

work = tempfile.mkdtemp()
os.makedirs(os.path.join(work, "dataloader"))
shutil.copy(small_boxes, os.path.join(work, "dataloader", "object_bbox_and_relationship_filtersmall.pkl"))
here = os.getcwd()
os.chdir(work)  # STTran reads the small-box file relative to the working directory
t0 = time.perf_counter()
ds = AG(mode="test", datasize="large", data_path=os.path.join(here, root).rstrip("/") + "/",
        filter_nonperson_box_frame=True, filter_small_box=task != "predcls")  # fmt: skip
t1 = time.perf_counter()
names = dict(AG_object_classes=ds.object_classes, AG_all_predicates=ds.relationship_classes,
             AG_attention_predicates=ds.attention_relationships, AG_spatial_predicates=ds.spatial_relationships,
             AG_contacting_predicates=ds.contacting_relationships, iou_threshold=0.5)  # fmt: skip
evaluators = {
    "with": BasicSceneGraphEvaluator(mode=task, **names, constraint="with"),
    "semi": BasicSceneGraphEvaluator(mode=task, **names, constraint="semi", semithreshold=0.9),
    "no": BasicSceneGraphEvaluator(mode=task, **names, constraint="no"),
}
for v, frames in enumerate(ds.video_list):
    with np.load(os.path.join(here, pred_dir, frames[0].split("/")[0] + ".npz")) as z:
        pred = {k: torch.from_numpy(z[k]) for k in z.files}
    for evaluator in evaluators.values():
        evaluator.evaluate_scene_graph(ds.gt_annotations[v], dict(pred))
t2 = time.perf_counter()
result = {c: {f"R@{k}": float(np.mean(v)) for k, v in e.result_dict[task + "_recall"].items()}
          for c, e in evaluators.items()}  # fmt: skip
result["seconds"] = {"loader": t1 - t0, "evaluation": t2 - t1}
os.chdir(here)
shutil.rmtree(work)
with open(out, "w") as fh:
    json.dump(result, fh, indent=1)
