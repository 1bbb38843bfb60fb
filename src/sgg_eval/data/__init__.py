"""The box data model (``types``), dataset readers (VG150, GQA, GQA200, Open Images V6: ``oiv6``), the split and
prediction stores (``store``), their checks, and the training statistics computed from a split (``stats``)."""
