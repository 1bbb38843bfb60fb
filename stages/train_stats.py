"""DVC stage train_stats: training split store -> docs/definitions.md §4 statistics (HDF5) and a small JSON summary;
the zero-shot set's seen splits are the dataset's (GQA: train and val)."""

from sgg_eval.boxes.splits import build_stats
from sgg_eval.pipeline.config import dataset, load_params, run_stage


def main() -> None:
    params = load_params()
    paths, opts = params["paths"], params["stats"]
    seen = [f"{paths['splits']}/{s}.h5" for s in dataset(params).zeroshot_seen if s != "train"]
    summary = build_stats(
        f"{paths['splits']}/train.h5",
        f"{paths['splits']}/test.h5",
        f"{paths['stats']}/stats.h5",
        f"{paths['stats']}/summary.json",
        drop_non_overlapping=opts["drop_non_overlapping"],
        background_must_overlap=opts["background_must_overlap"],
        seen_paths=seen,
    )
    print(
        f"train_stats: {summary['num_train_relations']} training relations, "
        f"{summary['num_zeroshot_test_triplets']} zero-shot test triplets"
    )


if __name__ == "__main__":
    run_stage(main)
