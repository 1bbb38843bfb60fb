"""Panoptic scene graphs (PSG): the second product, on the same metric core (``metrics.reduce``,
``metrics.document``) as boxes. Its data model (``types``), readers (``psg_json`` and ``panoptic_png`` for the
GT; ``sgbench_submission``, ``openpsg_submit``, ``instance_lists``, ``tiff_layers`` for predictions), matching
(``matching``), ranks (``ranks``), the protocols' reductions (``reduce``), the per-image work over processes
(``work``) and the entry points (``evaluate``, ``audit``, ``stats``, ``pack``)."""
