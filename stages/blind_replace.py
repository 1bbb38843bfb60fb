"""DVC stage blind_replace: paper Table 1 (blind replacement of the N tail predicates) as JSON."""

from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.model_stages import run_blind_replace


def main() -> None:
    params = load_params()
    rows = run_blind_replace(params, f"{params['paths']['results']}/blind_replacement.json")
    print("blind_replace: mR@100 " + " ".join(f"N={r['N']}:{100 * r['mR@100']:.1f}" for r in rows))


if __name__ == "__main__":
    run_stage(main)
