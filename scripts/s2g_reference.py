"""Scene-Graph-Benchmark.pytorch's S2G code, run in a Python that has torch and h5py (never this project's
environment), for checking ``sgg_eval.retrieval`` against it (docs/s2g.md):

    PY scripts/s2g_reference.py evaluate SGB_DIR EMBEDDINGS.npz OUT.json
    PY scripts/s2g_reference.py preprocess SGB_DIR CASE_DIR OUT.json
    PY scripts/s2g_reference.py model SGB_DIR TESTS_DIR OUT.npz

SGB_DIR is a checkout of KaihuaTang/Scene-Graph-Benchmark.pytorch (tested at 6f75881); these modes read its
``maskrcnn_benchmark/image_retrieval``, ``structures/bounding_box.py``, ``layers/smooth_l1_loss.py`` and ``solver/``,
which run unmodified; what does not install here (the maskrcnn_benchmark modules they import but these functions
never call) is stood in for by empty modules.

``model``: its ``modelv2.SGEncode``, ``solver.make_optimizer`` and ``WarmupMultiStepLR`` on TESTS_DIR's
``s2g_fixture`` weights and graphs (``model()`` below says what OUT.npz holds).

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

    # and, as it wrote them, the ids and the incidence matrices the model attends with ("image_graph",
    # "text_graph": one [E, R] matrix in a list; [E, 1] of zeros for a graph without relations)
    return {
        coco: {
            "img": decode(item["img"], names["img_obj"], names["img_rel"]),
            "txt": decode(item["txt"], names["txt_obj"], names["txt_rel"]),
            "ids": {"img": item["img"], "txt": item["txt"]},
            "incidence": {"img": item["image_graph"][0], "txt": item["text_graph"][0]},
        }
        for coco, item in encoded.items()
    }


def model() -> dict:
    """Its ``modelv2.SGEncode`` with ``tests/s2g_fixture.model_weights``, dropout off (``eval()``): each graph's
    encoding, the loss of the first four pairs against the last four, and the encodings after ``MODEL_STEPS``
    steps of its optimiser and schedule (``solver.make_optimizer``, ``WarmupMultiStepLR``, the S2G config's
    values) with the gradients clipped at norm 5 (its ``clip_grad_norm`` is this formula; torch's is used)."""
    sys.path.insert(0, INPUT)
    import s2g_fixture

    sys.modules["maskrcnn_benchmark.layers"] = types.ModuleType("maskrcnn_benchmark.layers")
    loss_spec = importlib.util.spec_from_file_location(
        "sl1", os.path.join(SGB, "maskrcnn_benchmark", "layers", "smooth_l1_loss.py")
    )
    sl1 = importlib.util.module_from_spec(loss_spec)
    loss_spec.loader.exec_module(sl1)
    sys.modules["maskrcnn_benchmark.layers"].smooth_l1_loss = sl1.smooth_l1_loss
    lr_spec = importlib.util.spec_from_file_location(
        "maskrcnn_benchmark.solver.lr_scheduler", os.path.join(SGB, "maskrcnn_benchmark", "solver", "lr_scheduler.py")
    )
    lr_scheduler = importlib.util.module_from_spec(lr_spec)
    lr_spec.loader.exec_module(lr_scheduler)
    sys.modules["maskrcnn_benchmark.solver.lr_scheduler"] = lr_scheduler
    solver_spec = importlib.util.spec_from_file_location(
        "maskrcnn_benchmark.solver.build", os.path.join(SGB, "maskrcnn_benchmark", "solver", "build.py")
    )
    build = importlib.util.module_from_spec(solver_spec)
    solver_spec.loader.exec_module(build)

    io, ip, to, tp = (n + 1 for n in s2g_fixture.MODEL_SIZES)
    net = _load("modelv2").SGEncode(img_num_obj=io, img_num_rel=ip, txt_num_obj=to, txt_num_rel=tp)
    net.load_state_dict({k: torch.from_numpy(v) for k, v in s2g_fixture.model_weights().items()})
    net.eval()
    graphs = s2g_fixture.model_graphs()

    def as_input(entities, relations):
        # preprocessing.py's image_graph/text_graph: [[1 if es in rs else 0 ...]] as a [1, E, R] tensor
        matrix = [[1.0 if es in rs else 0.0 for rs in relations] for es in entities]
        return {
            "entities": torch.LongTensor(entities),
            "relations": torch.LongTensor(relations),
            "graph": torch.FloatTensor([matrix]),
        }

    def encodings():
        with torch.no_grad():
            return {
                side: torch.cat(
                    [net.encode(as_input(*g), is_img=side == "image", is_txt=side == "text") for g in graphs[side]]
                ).numpy()
                for side in ("image", "text")
            }

    def loss():
        imgs = [as_input(*g) for g in graphs["image"]]
        txts = [as_input(*g) for g in graphs["text"]]
        losses = net(imgs[:4], txts[:4], imgs[4:], txts[4:])
        return sum(losses) / (len(losses) + 1e-9)

    before = encodings()
    first_loss = float(loss())
    solver = types.SimpleNamespace(
        BASE_LR=0.01, BIAS_LR_FACTOR=1, WEIGHT_DECAY=0.0001, WEIGHT_DECAY_BIAS=0.0, MOMENTUM=0.9
    )
    cfg = types.SimpleNamespace(SOLVER=solver)
    optimizer = build.make_optimizer(cfg, net, None, rl_factor=32.0)
    schedule = lr_scheduler.WarmupMultiStepLR(
        optimizer, (10000, 16000), 0.1, warmup_factor=0.1, warmup_iters=500, warmup_method="linear"
    )
    losses = []
    for _ in range(s2g_fixture.MODEL_STEPS):
        value = loss()
        losses.append(float(value))
        optimizer.zero_grad()
        value.backward()
        torch.nn.utils.clip_grad_norm_([p for p in net.parameters() if p.requires_grad], 5.0)
        optimizer.step()
        schedule.step()
    after = encodings()
    return {
        "image": before["image"],
        "text": before["text"],
        "loss": np.float64(first_loss),
        "step_losses": np.array(losses),
        "image_after": after["image"],
        "text_after": after["text"],
    }


if MODE == "model":
    np.savez(OUT, **model())
else:
    with open(OUT, "w") as fh:
        json.dump({"evaluate": evaluate, "preprocess": preprocess}[MODE](), fh, sort_keys=True)
