"""The SIMULATED benchmarks: ``world`` (a VG150-like dataset) and ``models`` (backbones × debiasing methods ×
tasks), with their settings in ``params`` (plain dataclasses the configuration schema checks); ``psg_world``
(a PSG-like ``psg.json`` with panoptic PNGs) and ``psg_models`` (SGBench submissions of one- and two-stage
methods)."""
