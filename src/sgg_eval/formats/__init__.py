"""Readers of box predictions in the formats researchers have: ``eval_results.pytorch`` (``eval_results``, over
the torch-free reader in ``torch/``) and SGBench JSON (``sgbench_json``). Panoptic readers are in ``panoptic``."""
