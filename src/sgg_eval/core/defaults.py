"""Every default of the metric family, of the PKO prior and of the dataset splits, stated once.

The library's signatures (``EvalOptions``, ``PKOParams``, the matchers), the command line's defaults and help,
the pipeline's MLflow parameters and the metric names read them from here; ``conf/`` states the same values
for Hydra, and ``tests/test_defaults.py`` fails when ``conf/`` disagrees or another source file states one.
"""

from __future__ import annotations

from sgg_eval.core.protocols import (  # noqa: F401  (ProVision's defaults: its record's options)
    BOXES,
    BY_NAME,
    PANOPTIC,
    PROVISION_SBERT_MODEL,
    PROVISION_TOP_K,
    REGISTRY,
    TEXT,
    VIDEO,
    names,
)

# The K of each family (docs/metrics.md). R@K, mR@K, ngR@K, zR@K, A@K, PR@K, F1@K: the reference evaluator's.
RECALL_KS = (20, 50, 100)
# IMR@K and wIMR@K: Li et al. 2022 report K = 10, 20, 50.
IMR_KS = (10, 20, 50)
# R_tr@K and wR_tr@K (triplet recall over every predicate of a GT pair).
TRIPLET_KS = (5, 10, 15, 20, 50)
# Open Images V6's R@K (micro and per image): the K PySGG's OI evaluator computes (docs/oiv6.md).
OIV6_RECALL_KS = (1, 5, 10, 20, 50, 100)
# PGSG's (Pix2Grp, CVPR 2024) open-vocabulary R@K and mR@K: its evaluator's K (docs/openvocab.md), in its record.
PGSG_KS = BY_NAME["pgsg"].means_ks
# R@kx: K relative to the image's number of GT triplets, K = round(k · M).
RELATIVE_KS = (1, 2, 10)
# InformativeRecall@K: SGG-Benchmark's K (its SGInformativeRecall), and the encoder of its captions by default: exact,
# model-free (equal strings), as its own default (all-mpnet-base-v2) needs a download and a GPU (docs/sgg_benchmark.md).
IR_KS = (5, 10, 20, 50, 100)
IR_ENCODER = "exact"

# Table 1 of the paper (blind replacement) reports mR at this K.
BLIND_K = 100

# wIMR's exponent on each predicate's compositional diversity n_c (0 gives IMR exactly); the paper's 0.5.
TAU = 0.5
# SGDet: a predicted object matches a GT object of its label at IoU >= this; the reference evaluator's.
IOU_THRESHOLD = 0.5
# Images without any predicted pair: skipped, as Scene-Graph-Benchmark.pytorch does ("strict": all-miss).
PROTOCOL = "reference"

# PKO (docs/definitions.md §5): z = ẑ + λ·b; λ = 1 as in the paper, ε added to every training count.
LAM = 1.0
EPS = 1e-3

# The choices the defaults are among (the tasks: sgg_eval.core.tasks), read from the protocol registry
# (sgg_eval.core.protocols: one record per protocol, with its source; `sgg-eval protocols` lists them).
# Box protocols (docs/definitions.md §2): "reference" skips images without a predicted pair, "strict" counts
# them as all-miss, "oiv6" reports Open Images V6's numbers as PySGG computes them (docs/oiv6.md), and the
# open-vocabulary protocols report novel-object and novel-relation recall as OvSGTR, VS3 and PGSG compute them
# (docs/openvocab.md). Panoptic protocols (docs/metrics.md, "Panoptic SGG"): the sgbench command's, the SGBench
# paper's, OpenPSG's evaluator's. Text scene graphs of multimodal LLMs (docs/text_graphs.md): "sets" scores an
# answer as a set, one-to-one; the others as R1-SGG, SceneGraphVLM, ASMv2 and ProVision do.
PROTOCOLS = names(BOXES)
OPENVOCAB_PROTOCOLS = tuple(p.name for p in REGISTRY if p.settings)
# Open-vocabulary settings: novel object classes (OvD), novel predicates (OvR), both; each protocol's own.
OPENVOCAB_SETTINGS = {p.name: p.settings for p in REGISTRY if p.settings}
# Box protocols whose loader keeps GT boxes past the image border (OvSGTR's, PGSG's); the others' clip them.
UNCLIPPED_GT_PROTOCOLS = tuple(p.name for p in REGISTRY if p.gt_clipped is False)
PSG_PROTOCOLS = names(PANOPTIC)
# How each panoptic protocol's tool decodes a GT PNG (docs/metrics.md, "Reading the GT PNGs").
PSG_PNG_READERS = {p.name: p.png_reader for p in REGISTRY if p.png_reader}
TEXT_PROTOCOLS = names(TEXT)
# Video scene graphs on Action Genome (docs/action_genome.md): STTran's evaluator, as every AG paper copies it.
VIDEO_PROTOCOLS = names(VIDEO)
AG_SMALL_BOX_STORE = "test_filtersmall.h5"  # the split store made from the STTran authors' small-box file
AG_TABLE_KS = (10, 20, 50)  # the K Action Genome's tables print (STTran's Table 1)
PSG_PROTOCOL = "sgbench"
# Head/body/tail predicates (metrics.longtail): auto = PySGG's VG150 parts on VG150's predicates, else by the
# training statistics' frequency; or one of the two everywhere.
LONGTAIL_RULES = ("auto", "pysgg", "frequency")
LONGTAIL_RULE = "auto"
LONGTAIL_KS = (50, 100)  # the head/body/tail table's K, as BGNN and PySGG print it
# Sentence-to-Graph retrieval (S2G, issue 50), as Scene-Graph-Benchmark.pytorch's image_retrieval computes it: the
# recall cut-offs its evaluator prints, its test galleries (the first 1,000 and 5,000 test images), and the object
# score below which preprocessing.py drops a predicted object.
S2G_KS = (1, 5, 10, 20, 50, 100)
S2G_GALLERIES = (1000, 5000)
S2G_OBJECT_THRESHOLD = 0.1
# Its test block (the first 5,000 caption-valid test images; the next 1,000 are the validation block, the rest train)
S2G_TEST_BLOCK, S2G_VAL_BLOCK = 5000, 1000
# Its retrieval model (modelv2.SGEncode) and training: tools/image_retrieval_main.py with S2G-RETRIEVAL.md's command
# on configs/e2e_relation_X_101_32_8_FPN_1x.yaml (SOLVER: BASE_LR 0.01 x IMS_PER_BATCH 32 per parameter, bias
# factor 1, WEIGHT_DECAY 1e-4, bias 0 (defaults.py), MOMENTUM 0.9, GRAD_NORM_CLIP 5, WarmupMultiStepLR with
# WARMUP_FACTOR 0.1 over WARMUP_ITERS 500 (defaults.py), STEPS 10000/16000, GAMMA 0.1, MAX_ITER 18 epochs; seed 0)
S2G_MODEL = {"embed": 512, "hidden": 512, "final": 1024, "glimpses": 2, "dropout": 0.2, "margin": 1.0,
             "smooth_l1_beta": 1.0 / 9}  # fmt: skip
S2G_TRAINING = {"batch": 32, "base_lr": 0.01, "weight_decay": 1e-4, "weight_decay_bias": 0.0, "momentum": 0.9,
                "grad_clip": 5.0, "warmup_factor": 0.1, "warmup_iters": 500, "steps": (10000, 16000),
                "gamma": 0.1, "epochs": 18, "seed": 0}  # fmt: skip
# Predicted triplets per image in `evaluate --per-image` records: the largest K of R@K, so every R@K reduces from them.
PER_IMAGE_K = max(RECALL_KS)

# Dataset splits. Images held out for validation: VG150's and GQA's first training images (the reference's and
# Knyazev et al.'s num_val_im), GQA200's first kept test images (SHA-GCL's).
NUM_VAL_IM = 5000
# VG150's h5 stores boxes at longest side 1024 (``boxes_1024``) and 512; the reference reads 1024.
BOX_SCALE = 1024
# The VG150 h5 key of the per-image split codes (2 test, 0 train); VS3 and OvSGTR read ``split_GLIPunseen``, a
# copy with -2 on the test images GLIP saw in pre-training.
SPLIT_KEY = "split"
