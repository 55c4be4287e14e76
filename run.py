"""Hydra entry point: python run.py [-m] key=value ... (one job = one grid cell)."""

import hydra
from omegaconf import DictConfig


@hydra.main(config_path="conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> str:
    from judgebench.pipeline import run_job

    return run_job(cfg).status


if __name__ == "__main__":
    main()
