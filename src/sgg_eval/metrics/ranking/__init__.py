"""Ranking box predictions: the families and their primitives (``families``, the definition), a block of images
turned into concatenated candidates (``candidates``), ranked by first match for every family in one set of array
calls (``block_ranks``, with the NG top list in ``ng_top``) into the records ``metrics.rank_records`` holds and
``metrics.reduce`` accumulates; ``blocks`` runs the blocks over ``--jobs`` processes."""
