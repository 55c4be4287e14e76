"""tracking/run_params.py: a cell's params are the config leaves that say what it computes, masked, long ones aside."""

from __future__ import annotations

from judgebench.tracking import run_params

CONFIG = {
    "job": "grid_cell",
    "seed": 7,  # not a cell group or key: where and how, in config.yaml only
    "dataset": {"name": "dl19", "qrels": "/data/qrels.txt", "depth": 100},
    "judge": {
        "_target_": "judgebench.judges.Llm",
        "model": "gpt",
        "api_key": "sk-123",
        "batch_size": 8,
        "prompt": "p" * 600,
        "options": {"temperature": 0.0, "stop": None},
    },
}


def test_only_what_defines_the_cell_is_a_param():
    assert run_params.cell_config(CONFIG) == {
        "job": "grid_cell",
        "dataset.name": "dl19",
        "dataset.depth": 100,
        "judge.model": "gpt",
        "judge.api_key": "sk-123",
        "judge.prompt": "p" * 600,
        "judge.options.temperature": 0.0,
    }


def test_params_are_masked_and_a_long_value_is_set_aside_as_an_artifact_text():
    params, long_values = run_params.params_from_config(CONFIG)
    assert params["judge.api_key"] != "sk-123" and "sk-123" not in str(params)
    assert params["judge.prompt"] == "<artifact params/judge.prompt.txt>"
    assert long_values == {"judge.prompt": "p" * 600}
    assert params["dataset.depth"] == "100" and params["judge.options.temperature"] == "0.0"
    assert len(params["judge.prompt"]) <= run_params.PARAM_MAX < 600
