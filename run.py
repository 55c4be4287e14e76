"""Hydra entry point: python run.py [-m] key=value ... (one job = one grid cell)."""

import hydra
from omegaconf import DictConfig


@hydra.main(config_path="conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> str:
    if cfg.get("job", "grid_cell") == "content_bias":
        from judgebench.content_bias import run_content_bias

        return run_content_bias(cfg).status
    from judgebench.pipeline import run_job

    return run_job(cfg).status


if __name__ == "__main__":
    main()
