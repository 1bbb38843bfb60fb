"""The Python API (docs/api.md): ``evaluator`` (the box tasks as a streaming accumulator), ``psg_evaluator``
(its panoptic sibling), ``files`` (a file's evaluation as a function), ``metric`` (the torchmetrics adapter)
and ``inputs`` (one image from arrays, tensors or BoxLists). The package root exports their public names."""
