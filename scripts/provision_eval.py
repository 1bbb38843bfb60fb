"""ProVision's own scene-graph scorer, run in a Python that has torch, pandas and torchvision (never this project's
environment), for checking ``--protocol provision`` against it (docs/text_graphs.md):

    PY scripts/provision_eval.py PV_DIR ANSWERS.jsonl GT_psg.json TOP_K SEED OUT.json

PV_DIR is a checkout of JieyuZ2/ProVision (tested at 579ef22). Its ``get_scene_graph_metric.py``,
``eval_psg.py`` (``SceneGraphParser``) and ``scene_graph_evaluator.py`` (``SceneGraphRecall``) run unmodified, as
its ``__main__`` calls them: ``get_data``, ``get_bbox_coverage`` per image, ``sg_recall``, with Python's ``random``
seeded by SEED first (its sample is unseeded). What does not install here is stood in for: the Osprey model
modules its files import but these functions never call (empty stubs), ``SentenceTransformer`` (``encode`` gives
``tests/provision_fixture.embed``, the stand-in sgg-eval's tests use) and ``util.cos_sim`` (its two lines:
``normalize(p=2, dim=-1)`` of both, then ``mm``). torchvision's own ``ops/boxes.py`` is loaded without its C
extension. Lines its script would stop on (not JSON; an answer whose parse raises ``IndexError``; a GPT graph
``process_gpt_sg`` cannot write) are left out first, as sgg-eval leaves them out. The GT file's name must hold
``psg`` (it picks its PSG reader by the path). OUT.json gets the four numbers, unrounded.
"""

import importlib
import importlib.util
import json
import os
import random
import sys
import tempfile
import types

import pandas as pd
import torch

PV, ANSWERS, GT, TOP_K, SEED, OUT = sys.argv[1:7]
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))
from provision_fixture import embed  # noqa: E402


def _module(name, **attrs):
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    sys.modules[name] = module
    return module


def _package(name, path):
    return _module(name, __path__=[path])


class _Stub:
    def __init__(self, *args, **kwargs):
        pass


class _SentenceTransformer:
    def __init__(self, name, device=None):
        pass

    def encode(self, texts, convert_to_tensor=True, device=None):
        return torch.from_numpy(embed(list(texts)))


def _cos_sim(a, b):
    a, b = torch.nn.functional.normalize(a, p=2, dim=-1), torch.nn.functional.normalize(b, p=2, dim=-1)
    return torch.mm(a, b.transpose(0, 1))


# torchvision's pure-Python box ops, without the C extension that fails to load beside this torch
TV = os.path.dirname(importlib.util.find_spec("torchvision").origin)
_package("torchvision", TV)
_module("torchvision.extension", _assert_has_ops=lambda: None)
_module("torchvision.utils", _log_api_usage_once=lambda *a, **k: None)
ops = _package("torchvision.ops", os.path.join(TV, "ops"))
ops.box_iou = importlib.import_module("torchvision.ops.boxes").box_iou

ROOT = os.path.join(PV, "provision", "annotation", "osprey")
for name, path in (("osprey", ROOT), ("osprey.eval", os.path.join(ROOT, "eval")),
                   ("osprey.eval.psg", os.path.join(ROOT, "eval", "psg"))):  # fmt: skip
    _package(name, path)
_module("osprey.train")
_module("osprey.train.train", DataArguments=_Stub)
_module("osprey.constants", IMAGE_TOKEN_INDEX=-200)
_module("osprey.mm_utils", tokenizer_image_token=None)
_module("osprey.datasets")
_module("osprey.datasets.multi_region", MultiRegionDataset=type("MultiRegionDataset", (), {}))
_module("osprey.datasets.prompts", RELATION_QUESTIONS=[""], RELATION_DESCRIPTION_QUESTIONS=[""], SG_QUESTIONS=[""])
_module("osprey.eval.eval", OspreyEval=type("OspreyEval", (), {}))
_module("osprey.eval.openai_utils", OpenaiAPI=_Stub)
_module("osprey.eval.draw_utils", visualize_masks=None, xywh2xyxy=None)
_module("osprey.eval.utils", load_hdf5_file=None, is_hdf5_file=lambda path: False)
_module("sentence_transformers", SentenceTransformer=_SentenceTransformer, util=types.SimpleNamespace(cos_sim=_cos_sim))
_module("cv2")
_module("panopticapi")
_module("panopticapi.utils", rgb2id=None)
_module("supervision", Detections=_Stub)
_module("matplotlib")
_module("matplotlib.pyplot")
_module("transformers", AutoModelForCausalLM=None, AutoTokenizer=None, BitsAndBytesConfig=None)

metric = importlib.import_module("osprey.eval.psg.get_scene_graph_metric")
eval_psg = importlib.import_module("osprey.eval.psg.eval_psg")
evaluator = importlib.import_module("osprey.eval.psg.scene_graph_evaluator")
from tqdm import tqdm  # noqa: E402

tqdm.pandas(disable=True)

facts = json.load(open(os.path.join(REPO, "src", "sgg_eval", "data", "resources", "psg_facts.json")))
work = tempfile.mkdtemp()
category = os.path.join(work, "psg_category.json")
json.dump({"classes": facts["object_classes"], "predicate_classes": facts["predicate_classes"]}, open(category, "w"))
parser = eval_psg.SceneGraphParser(bert_model="stand-in", category=category, device="cpu")

kept = []
for line in open(ANSWERS):
    try:
        row = json.loads(line)
    except ValueError:
        continue
    if not isinstance(row, dict):
        continue
    try:
        if "updated_sg" in row:
            text = metric.process_gpt_sg(pd.DataFrame([row]))["scene_graph_raw_text"][0]
            mode = 0
        else:
            text, mode = row["pred_raw"], 2
        parser.parse_outputs(text, sg_mode=mode, top_k=None, get_labels=False)
    except (IndexError, ValueError, TypeError, KeyError, AttributeError):
        continue  # its script stops here
    kept.append(line)
answers = os.path.join(work, "answers.jsonl")
open(answers, "w").write("".join(kept))

random.seed(int(SEED))
df = metric.get_data(prediction=answers, data=GT, sg_parser=parser, sg_mode=2, top_k=int(TOP_K))
df["coverage"] = df.apply(lambda x: parser.get_bbox_coverage(x["gt_boxes"], x["pred_boxes"]), axis=1)
result = evaluator.SceneGraphEvaluator.get_evaluator("sg_recall")(df.to_dict(orient="records"), category=facts)
numbers = result["sg_recall"]
json.dump({"coverage": float(df["coverage"].mean()), "object_recall": numbers["object_recall"],
           "recall": numbers["recall"], "mean_recall": numbers["mean_recall"], "images": len(df)},
          open(OUT, "w"), indent=1)  # fmt: skip
