"""`make ui`: the URL of the project's experiment's runs table in the MLflow UI (the UI's home page is a
GenAI overview), on the pipeline's shared view when it has logged one (runs grouped by task, summary metrics).
Usage: python scripts/mlflow_url.py PORT [STORE]; the experiment is params.yaml's tracking.experiment. Prints the
UI's root when the store has no such experiment yet."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import yaml

VIEW_TAG = "mlflow.sharedViewState.sggeval"  # pipeline/tracking.py's VIEW_TAG (this script imports no package)

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    port = sys.argv[1]
    store = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "mlflow.db"
    params = yaml.safe_load((ROOT / "params.yaml").read_text()) if (ROOT / "params.yaml").exists() else {}
    name = ((params or {}).get("tracking") or {}).get("experiment") or "sgg-eval"
    base = f"http://127.0.0.1:{port}"
    found, view = None, None
    if store.exists():
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
            try:
                found = db.execute(
                    "SELECT experiment_id FROM experiments WHERE name = ? AND lifecycle_stage = 'active'", (name,)
                ).fetchone()
                view = (
                    found
                    and db.execute(
                        "SELECT 1 FROM experiment_tags WHERE experiment_id = ? AND key = ?", (found[0], VIEW_TAG)
                    ).fetchone()
                )
            except sqlite3.Error:
                found = None
    # the pipeline's shared view (pipeline/tracking.py): runs grouped by task, the summary metrics as columns
    shared = f"?viewStateShareKey={VIEW_TAG.rsplit('.', 1)[1]}" if view else ""
    print(f"{base}/#/experiments/{found[0]}/runs{shared}" if found else base)


if __name__ == "__main__":
    main()
