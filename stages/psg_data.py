"""DVC stage psg_data: the panoptic dataset (the SIMULATED PSG-like benchmark, or the real files checked and
fingerprinted) -> psg/summary.json (and, simulated, psg.json with its PNGs)."""

from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.psg_stages import run_psg_data


def main() -> None:
    summary = run_psg_data(load_params())
    kind = "SIMULATED" if summary["simulated"] else "real"
    images = summary["test"]["images"]
    print(f"psg_data: {kind} {summary['dataset']}, {images} test images")


if __name__ == "__main__":
    run_stage(main)
