"""R1-SGG's own evaluation of text scene graphs, run in a Python that has torch, pycocotools and nltk (never this
project's environment), for checking ``--protocol r1sgg`` against it (docs/text_graphs.md):

    PY scripts/r1sgg_eval.py R1_DIR vg150|psg ROWS.jsonl ANSWERS_DIR OUT.json [--no-wordnet]

R1_DIR is a checkout of gpt4vision/R1-SGG (tested at e4de64d). Its two scripts run unmodified, as its README
chains them: ``src/sgg_gather_preds.py`` (``main()``, on ANSWERS_DIR) writes the gathered file, then
``src/vg150_eval.py`` runs as ``__main__`` on it. Stand-ins: ``datasets.load_dataset`` returns the rows of ROWS
(``tests/r1sgg_fixture.py``) with an ``image`` that has the row's size; ``spacy`` (only its debug matching uses
it), ``matplotlib`` (drawing only) and ``torchvision`` (its version is read at import; this torch has no
matching wheel). WordNet is nltk's (set NLTK_DATA); ``--no-wordnet`` makes it find nothing, to compare with
sgg-eval run without ``--wordnet``. OUT.json gets every number the two scripts print (unrounded, read from their
variables), under sgg-eval's names, and the failure counts.
"""

import contextlib
import io
import json
import os
import runpy
import sys
import types

R1, DATASET, ROWS, ANSWERS, OUT = sys.argv[1:6]
NO_WORDNET = "--no-wordnet" in sys.argv[6:]
ROWS = os.path.abspath(ROWS)
ANSWERS = os.path.abspath(ANSWERS)
OUT = os.path.abspath(OUT)


class _Image:
    def __init__(self, size):
        self.size = size


def _load_dataset(name):
    with open(ROWS) as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    for row in rows:
        row["image"] = _Image((row.pop("width"), row.pop("height")))
    return {"train": rows}


sys.modules["datasets"] = types.SimpleNamespace(load_dataset=_load_dataset)
sys.modules["spacy"] = types.SimpleNamespace(load=lambda name: None)
sys.modules["torchvision"] = types.SimpleNamespace(__version__="0.28.0")  # misc.py reads its version only
_mpl = types.ModuleType("matplotlib")
_mpl.pyplot = types.ModuleType("matplotlib.pyplot")
sys.modules["matplotlib"], sys.modules["matplotlib.pyplot"] = _mpl, _mpl.pyplot
os.chdir(R1)
sys.path[:0] = [R1, os.path.join(R1, "src")]
if NO_WORDNET:
    from nltk.corpus import wordnet

    wordnet.synsets = lambda *a, **k: []

gathered = OUT + ".gathered.json"
gather = runpy.run_path(os.path.join("src", "sgg_gather_preds.py"), run_name="r1_gather")
sys.argv = ["sgg_gather_preds.py", "psg" if DATASET == "psg" else "vg", ANSWERS, gathered]
printed = io.StringIO()
with contextlib.redirect_stdout(printed):
    gather["main"]()
fails = next(line for line in printed.getvalue().splitlines() if line.startswith("fails:"))
failures, files = json.loads(fails.split(":", 1)[1])

from src.utils.sgg_eval import SggEvaluator  # noqa: E402

results = []
_reset = SggEvaluator.reset


def _keep_results(self):  # the script resets the evaluator after printing: keep the dict it printed
    if hasattr(self, "sgg_result_dict"):
        results.append(self.sgg_result_dict)
    _reset(self)


SggEvaluator.reset = _keep_results
sys.argv = ["vg150_eval.py", "JosephZ/psg_test_sg" if DATASET == "psg" else "JosephZ/vg150_val_sgg_prompt", gathered]
with contextlib.redirect_stdout(io.StringIO()):
    env = runpy.run_path(os.path.join("src", "vg150_eval.py"), run_name="__main__")

import numpy as np  # noqa: E402

r = results[-1]
values = {
    "ngR_loop": float(np.mean(env["ngR"])),
    "ng-mR_loop": sum(e[1] for e in env["mR_list"]) / len(env["mR_list"]),
    "ngR_loop_per_image": float(env["ngR_per_image"]),
    "ng-mR_loop_per_image": sum(e[1] for e in env["mR_per_image"]) / len(env["mR_per_image"]),
}
for k in (20, 50, 100):
    values[f"R@{k}"] = float(np.mean(r["sgdet_recall"][k]))
    values[f"ngR@{k}"] = float(np.mean(r["sgdet_recall_nogc"][k]))
    values[f"mR@{k}"] = float(r["sgdet_mean_recall"][k])
    values[f"ng-mR@{k}"] = float(r["sgdet_ng_mean_recall"][k])
    values[f"zR@{k}"] = float(np.mean(r["sgdet_zeroshot_recall"][k])) if r["sgdet_zeroshot_recall"][k] else None
    zs = r["sgdet_ng_zeroshot_recall"][k]
    values[f"ng-zR@{k}"] = float(np.mean(zs)) if zs else None
stats = env["sgg_evaluator"].coco_eval["bbox"].stats
values["det_mAP"], values["det_mAP@50"] = float(stats[0]), float(stats[1])
out = {
    "metrics": values,
    "counts": {"failures": failures, "answer_files": files, "failure_rate": failures / files,
               "images_ranked": len(r["sgdet_recall"][20])},
}  # fmt: skip
with open(OUT, "w") as fh:
    json.dump(out, fh, indent=1)
