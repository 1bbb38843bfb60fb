"""DVC stage psg_stats: the PSG training split (every psg.json entry outside test_image_ids with relations)
-> docs/definitions.md §4 statistics (zero-shot set, n_c), for zR@K and wIMR@K on PSG."""

from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.psg_stages import run_psg_stats


def main() -> None:
    summary = run_psg_stats(load_params())
    print(
        f"psg_stats: {summary['num_train_relations']} training relations, "
        f"{summary['num_zeroshot_test_triplets']} zero-shot test triplets"
    )


if __name__ == "__main__":
    run_stage(main)
