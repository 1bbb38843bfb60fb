"""Reports from result documents: the papers' tables (``tables``; panoptic: ``psg_tables``), their figures
(``figures``, ``psg_figures``), the per-predicate CSVs (``per_predicate``), the published tables shipped with
sgg-eval (``published``) and the static results pages (``site``)."""
