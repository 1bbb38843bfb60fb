"""Scene-Graph-Benchmark.pytorch's S2G code, run in a Python that has torch and h5py (never this project's
environment), for checking ``sgg_eval.retrieval`` against it (docs/s2g.md):

    PY scripts/s2g_reference.py evaluate SGB_DIR EMBEDDINGS.npz OUT.json
    PY scripts/s2g_reference.py preprocess SGB_DIR CASE_DIR OUT.json

SGB_DIR is a checkout of KaihuaTang/Scene-Graph-Benchmark.pytorch (tested at 6f75881). Its
``maskrcnn_benchmark/image_retrieval`` files run unmodified; what does not install here (the maskrcnn_benchmark
modules they import but these functions never call) is stood in for by empty modules.

``evaluate``: its ``evaluation.evaluator`` is given the embeddings as its ``run_test`` gathers them (one batch,
``[N, 2, 1, D]``: image graph, caption graph) and a logger that keeps what it prints. OUT.json gets the lines it
logged and, from the similarity matrix it returns, each image's rank by the definition
(``|{j : sim[i, j] >= sim[i, i]}|``).

``preprocess``: its ``preprocessing.preprocess_scene_graphs_output`` runs on CASE_DIR's files
(``tests/s2g_fixture.inputs`` writes them: ``eval_results.pytorch``, ``visual_info.json``,
``VG-SGG-dicts.json``, ``vg_capgraphs_anno.json``), with its real ``BoxList``. Also stood in for:
``DatasetCatalog`` (naming CASE_DIR's files; the roidb h5 it opens but never reads is an empty file) and
``torch.load``'s newer default (``weights_only=False``, as torch read files when the code was written). Its output
numbers names by ``list(set(...))`` orders of this process; OUT.json gets the graphs with the ids turned back into
names by those same orders, so that any two runs can be compared.
"""

import functools
import importlib.util
import json
import os
import sys
import types

import numpy as np
import torch

MODE, SGB, INPUT, OUT = sys.argv[1:5]

STUBS = {
    "maskrcnn_benchmark.utils.env": {"setup_environment": lambda: None},
    "maskrcnn_benchmark.config": {"cfg": None},
    "maskrcnn_benchmark.data": {"make_data_loader": None},
    "maskrcnn_benchmark.solver": {"make_lr_scheduler": None, "make_optimizer": None},
    "maskrcnn_benchmark.engine.trainer": {"reduce_loss_dict": None},
    "maskrcnn_benchmark.engine.inference": {"inference": None},
    "maskrcnn_benchmark.modeling.detector": {"build_detection_model": None},
    "maskrcnn_benchmark.utils.checkpoint": {"DetectronCheckpointer": None, "clip_grad_norm": None},
    "maskrcnn_benchmark.utils.collect_env": {"collect_env_info": None},
    "maskrcnn_benchmark.utils.comm": {"synchronize": None, "get_rank": None, "all_gather": None},
    "maskrcnn_benchmark.utils.imports": {"import_file": None},
    "maskrcnn_benchmark.utils.logger": {"setup_logger": None, "debug_print": None},
    "maskrcnn_benchmark.utils.miscellaneous": {"mkdir": None, "save_config": None},
    "maskrcnn_benchmark.utils.metric_logger": {"MetricLogger": None},
}
for name, attrs in STUBS.items():
    parts = name.split(".")
    for i in range(1, len(parts) + 1):
        module = sys.modules.setdefault(".".join(parts[:i]), types.ModuleType(".".join(parts[:i])))
        # a package's real modules stay importable (its structures.bounding_box, for unpickling predictions)
        module.__path__ = [os.path.join(SGB, *parts[:i])]
    sys.modules[name].__dict__.update(attrs)


def _load(name: str):
    path = os.path.join(SGB, "maskrcnn_benchmark", "image_retrieval", f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"s2g_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Logger:
    def __init__(self):
        self.lines = []

    def info(self, text):
        self.lines.append(text)


def evaluate() -> dict:
    data = np.load(INPUT)
    stacked = torch.stack([torch.from_numpy(data["image"]), torch.from_numpy(data["text"])], dim=1).unsqueeze(2)
    logger = Logger()
    similarity = _load("evaluation").evaluator(logger, [[stacked]])
    theirs = similarity.numpy()
    ranks = (theirs >= np.diag(theirs)[:, None]).sum(axis=1)
    return {"ranks": ranks.tolist(), "logged": logger.lines}


def decode(graph, objects, predicates):
    return {
        "entities": [objects[i - 1] for i in graph["entities"]],
        "relations": [[objects[s - 1], objects[o - 1], predicates[p - 1]] for s, o, p in graph["relations"]],
    }


def preprocess() -> dict:
    import h5py

    case = INPUT
    h5py.File(os.path.join(case, "roidb.h5"), "w").close()
    catalog = types.SimpleNamespace(
        DATA_DIR=case,
        DATASETS={
            "VG_stanford_filtered_with_attribute": {
                "capgraphs_file": "vg_capgraphs_anno.json",
                "dict_file": "VG-SGG-dicts.json",
                "image_file": "visual_info.json",
                "roidb_file": "roidb.h5",
            }
        },
    )
    sys.modules["maskrcnn_benchmark.config.paths_catalog"] = types.ModuleType("maskrcnn_benchmark.config.paths_catalog")
    sys.modules["maskrcnn_benchmark.config.paths_catalog"].DatasetCatalog = catalog
    torch.load = functools.partial(torch.load, weights_only=False)

    _load("preprocessing").preprocess_scene_graphs_output(case + os.sep, "upstream_sg.json")

    with open(os.path.join(case, "upstream_sg.json")) as fh:
        encoded = json.load(fh)
    with open(os.path.join(case, "vg_capgraphs_anno.json")) as fh:
        cap_graph = json.load(fh)
    with open(os.path.join(case, "VG-SGG-dicts.json")) as fh:
        vg_dict = json.load(fh)
    # the orders its function numbered the names by: the same expressions, in this same process
    names = {
        "img_obj": list(set(vg_dict["idx_to_label"].values())),
        "img_rel": list(set(cap_graph["idx_to_meta_predicate"].values())),
        "txt_obj": list(set(cap_graph["cap_category"].keys())),
        "txt_rel": list(set(cap_graph["cap_predicate"].keys())),
    }

    return {
        coco: {
            "img": decode(item["img"], names["img_obj"], names["img_rel"]),
            "txt": decode(item["txt"], names["txt_obj"], names["txt_rel"]),
        }
        for coco, item in encoded.items()
    }


with open(OUT, "w") as fh:
    json.dump({"evaluate": evaluate, "preprocess": preprocess}[MODE](), fh, sort_keys=True)
