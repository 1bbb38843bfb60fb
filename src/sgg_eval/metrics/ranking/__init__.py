"""Ranking many images at once: a block of images becomes concatenated candidates (``candidates``), ranked by
first match for every family in one set of array calls (``block_ranks``, with the NG top list in ``ng_top``),
into per-row records (``rank_records``) that ``metrics.reduce`` accumulates; ``blocks`` runs the blocks over
``--jobs`` processes. ``metrics.ranks`` is the readable per-image definition they equal."""
