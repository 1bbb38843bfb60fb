"""The SIMULATED benchmark: ``world`` (a VG150-like dataset) and ``models`` (backbones × debiasing methods ×
tasks), with their settings in ``params`` (plain dataclasses the configuration schema checks)."""
