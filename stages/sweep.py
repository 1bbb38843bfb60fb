"""Hydra sweep over metric hyperparameters on saved results (no evaluation, simulation or PKO is redone).

    python stages/sweep.py -m metrics.tau=0,0.25,0.5,0.75,1 metrics.imr_k=10,20,50
    python stages/sweep.py -m hydra/launcher=joblib metrics.tau=0,0.5,1        # parallel, local
    python stages/sweep.py -m hydra/launcher=submitit_slurm metrics.tau=0,0.5,1  # SLURM (hydra-submitit-launcher)

Each job is a nested MLflow run under one parent run per sweep; the sweep folder gets the tau-sweep table
and plot (reports/sweeps/<time>/).
"""

import os

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from sgg_eval.pipeline.config import run_stage
from sgg_eval.pipeline.sweep import run_job


@hydra.main(version_base="1.3", config_path="../conf", config_name="sweep")
def main(cfg: DictConfig) -> None:
    hc = HydraConfig.get()
    params = OmegaConf.to_container(cfg, resolve=True)
    sweep_dir = hc.sweep.dir if hc.mode.name == "MULTIRUN" else hc.run.dir
    job_dir = hc.runtime.output_dir
    run_stage(lambda: run_job(params, job_dir, sweep_dir))
    print(f"sweep job tau={cfg.metrics.tau} k={cfg.metrics.imr_k}: {os.path.relpath(job_dir)}")


if __name__ == "__main__":
    main()
