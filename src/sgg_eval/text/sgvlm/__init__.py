"""``--protocol sgvlm``: SceneGraphVLM's TOON answers (``toon``), its strict Hungarian-matched scores
(``metrics``) and the evaluation (``evaluate``); it scores PSG."""
