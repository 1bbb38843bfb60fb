"""The metric core both products share: the ranking families (``ranking.families``: the definition) and the box
ranker (``ranking``), the per-row rank records (``rank_records``), their reduction over images (``reduce``), the
metrics document built from it (``engine`` for boxes; ``panoptic.reduce`` for PSG), metric names, options, the
detector mAP, the variants of R@K and mR@K the literature mixes, the misuse signals, and the Open Images V6
protocol's own numbers (``oiv6``) and document (``oiv6_document``)."""
