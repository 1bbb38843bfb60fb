"""Reading ``torch.save`` files (Scene-Graph-Benchmark.pytorch's ``eval_results.pytorch``) without torch:
``reader.load`` is the way in; ``layouts`` reads the zip and legacy layouts, ``unpickler`` the pickle (``bulk_pickle``
for usual files, a restricted unpickler otherwise), into rows of ``tensor_table`` and ``boxlists``."""
