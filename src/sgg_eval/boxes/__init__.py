"""Scene graphs over boxes (VG150, GQA, a user's split): the library entry points of that product. Open a
prediction source with its GT (``sources``), evaluate it (``evaluate``), audit it against published numbers
(``audit``), apply the PKO prior (``pko``) and build split stores and training statistics from a dataset
(``splits``). Readers live in ``data`` and ``formats``, ranking and reductions in ``metrics``."""
