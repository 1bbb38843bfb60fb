"""DVC stage load_split: the configured dataset (conf/dataset: VG150, GQA, GQA200 or the simulator) -> one split
store per split."""

from sgg_eval.boxes.splits import build_splits
from sgg_eval.pipeline.config import dataset, load_params, run_stage


def main() -> None:
    params = load_params()
    out = params["paths"]["splits"]
    outputs = {s: f"{out}/{s}.h5" for s in ("train", "val", "test")}
    counts = build_splits(dataset(params), outputs, params["dataset"].get("raw"))
    print("load_split:", ", ".join(f"{s} {n} images" for s, n in counts.items()))


if __name__ == "__main__":
    run_stage(main)
