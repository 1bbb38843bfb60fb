"""Sentence-to-Graph retrieval (S2G, issue 50): scoring SGDet scene graphs by how well they let a retrieval model
find an image from its captions' graphs, as Scene-Graph-Benchmark.pytorch's image retrieval code does
(docs/s2g.md): ``graphs``, ``dataset``, ``ranking``, ``evaluate``; ``model`` and ``training`` (PyTorch, the
optional extra ``sgg-eval[s2g]``: only ``evaluate.run_s2g`` imports them, when called)."""
