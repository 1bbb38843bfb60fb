"""The box data model (``types``), dataset readers (VG150, GQA, GQA200), the split and prediction stores
(``store``), their checks, and the training statistics computed from a split (``stats``)."""
