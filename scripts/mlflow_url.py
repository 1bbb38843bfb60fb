"""`make ui`: the URL of the project's experiment's runs table in the MLflow UI (the UI's home page is a
GenAI overview). Usage: python scripts/mlflow_url.py PORT [STORE]; the experiment is params.yaml's
tracking.experiment. Prints the UI's root when the store has no such experiment yet."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    port = sys.argv[1]
    store = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "mlflow.db"
    params = yaml.safe_load((ROOT / "params.yaml").read_text()) if (ROOT / "params.yaml").exists() else {}
    name = ((params or {}).get("tracking") or {}).get("experiment") or "sgg-eval"
    base = f"http://127.0.0.1:{port}"
    found = None
    if store.exists():
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
            try:
                found = db.execute(
                    "SELECT experiment_id FROM experiments WHERE name = ? AND lifecycle_stage = 'active'", (name,)
                ).fetchone()
            except sqlite3.Error:
                found = None
    print(f"{base}/#/experiments/{found[0]}/runs" if found else base)


if __name__ == "__main__":
    main()
