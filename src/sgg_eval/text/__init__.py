"""Scene graphs written as text by multimodal LLMs: the third product, as ``panoptic/`` is the home of PSG. Each
text protocol is declared in ``core.protocols`` (what GT it takes, the options it owns, its runner and printer);
``evaluate`` dispatches on that record, for the command and the API alike, and ``printed`` prints what each tool
prints. sgg-eval's own ``sets`` protocol: ``graphs`` (the answers file), ``inputs`` (the files it reads), ``names``
(names to classes), ``sets`` (the one-to-one set matching) and ``sets_evaluate``. A published tool's protocol has
a folder of its own, with its readers, names, metrics and evaluation: ``r1sgg`` (VG150 or PSG rows), and three that
score PSG: ``sgvlm``, ``asmv2`` and ``provision``."""
