"""The metric core both products share: the ranking families (``ranking.families``: the definition) and the box
ranker (``ranking``), the per-row rank records (``rank_records``), their reduction over images (``reduce``), the
metrics document built from it (``engine`` for boxes; ``panoptic.reduce`` for PSG), metric names, options, the
detector mAP, the variants of R@K and mR@K the literature mixes, and the misuse signals."""
