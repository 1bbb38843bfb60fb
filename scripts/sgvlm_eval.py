"""SceneGraphVLM's own evaluator of text scene graphs, run in a Python that has torch, scipy and tqdm (never this
project's environment), for checking ``--protocol sgvlm`` against it (docs/text_graphs.md):

    PY scripts/sgvlm_eval.py SGV_DIR SAMPLES.jsonl OUT.json

SGV_DIR is a checkout of markus0440/SceneGraphVLM (tested at a6197da). Its
``metrics/qwen-bench/eval/eval_sgg_metrics_with_qwen.py`` runs unmodified with ``--strict-only`` (no model) on
SAMPLES.jsonl, lines it cannot read dropped first (it stops on them; sgg-eval counts and skips them). OUT.json gets
its summary as it writes it.
"""

import json
import os
import runpy
import sys
import tempfile

SGV, SAMPLES, OUT = sys.argv[1:4]
readable = []
with open(SAMPLES) as fh:
    for line in fh:
        try:
            if isinstance(json.loads(line), dict):
                readable.append(line.rstrip("\n"))
        except ValueError:
            pass
folder = tempfile.mkdtemp()
clean = os.path.join(folder, "samples.jsonl")
with open(clean, "w") as fh:
    fh.write("\n".join(readable) + "\n")
script = os.path.join(SGV, "metrics", "qwen-bench", "eval", "eval_sgg_metrics_with_qwen.py")
sys.argv = [script, "--pred-jsonl", clean, "--output-dir", folder, "--output-name", "m.json", "--strict-only"]
runpy.run_path(script, run_name="__main__")
with open(os.path.join(folder, "m.json")) as fh, open(OUT, "w") as out:
    json.dump(json.load(fh), out, indent=1)
