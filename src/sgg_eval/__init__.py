"""sgg-eval: exact, fast, reproducible evaluation of scene graph generation."""

__version__ = "0.1.0"
