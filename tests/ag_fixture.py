"""Generated Action Genome files and their split stores, for the AG tests (test_ag_files, test_api_video)."""

from __future__ import annotations

from pathlib import Path

from sgg_eval.cli import main
from sgg_eval.video.ag_example import write_release


def release_with_splits(root: Path, videos: int, seed: int) -> dict[str, str]:
    """``root/AG`` (the release's files and the small-box file) and ``root/splits`` (train.h5, test.h5,
    test_filtersmall.h5) as `sgg-eval split --ag-dir` writes them; returns the release's paths."""
    paths = write_release(str(root / "AG"), videos, seed=seed)
    assert main(["split", "--ag-dir", str(root / "AG"), "--ag-small-boxes", paths["filtersmall"],
                 "-o", str(root / "splits")]) == 0  # fmt: skip
    return paths
