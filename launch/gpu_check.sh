#!/usr/bin/env bash
# The GPU check of the local-model path: RankT5-base and PRP (all pairs) on FLAN-T5 over a few DL19 queries
# in bfloat16 on one GPU; prints prompts/s, peak GPU memory, the FLOP rate reached and nDCG@10 per check, and
# the GPU memory still allocated once every model is released; then the UMBRELA judge (TransformersJudge) on a
# random-weight Qwen2.5-7B-shaped decoder over 1,024 DL19 label-set pairs at token budgets 16384, 65536 and the
# default (from free memory), shared vs unshared prefix side by side: prompts/s, TFLOP/s and its share of a
# matmul ceiling measured first, peak memory, padding, equal labels (--skip-judge leaves it out).
# Takes 4-8 minutes on one H100/H200.
#
#   launch/gpu_check.sh [--queries 5] [--prp-model google/flan-t5-xxl] [--out result.json]
#   launch/gpu_check.sh --cpu --tiny          # the same code path on tiny models, on any machine (a test runs it)
#
# What it needs:
# - a CUDA GPU: without one it prints one line and exits 2 (unless --cpu);
# - a python ($PYTHON, else ./.venv/bin/python, else python3) with torch (a CUDA build), transformers, accelerate,
#   tokenizers, huggingface_hub, safetensors, numpy, pandas, scipy, scikit-learn, statsmodels, and what judgebench
#   imports on this path: omegaconf (+ antlr4-python3-runtime), tqdm, tenacity, aiolimiter, krippendorff,
#   ir-measures, pytrec-eval-terrier. judgebench itself comes from ./src (no install). Wheels in ./.whl are
#   installed into a private folder first, for a machine without a package index; made where pip works, e.g.
#     pip wheel --no-deps -w .whl omegaconf==2.3.0 antlr4-python3-runtime==4.9.3 krippendorff ir-measures aiolimiter tenacity
#     pip download --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 -d .whl pytrec-eval-terrier
# - the DL19 passages: --data-dir, JUDGEBENCH_TREC_DL_DIR, ../shared/data/trec-dl or ./shared/data/trec-dl;
# - models: Soyoung97/RankT5-base and google/flan-t5-xxl (or -xl, -large) in the Hugging Face cache of HF_HOME,
#   fetched beforehand where there is internet, with the same HF_HOME:
#       judgebench models download Soyoung97/RankT5-base google/flan-t5-xxl
#   It never downloads (HF_HUB_OFFLINE=1). A model that is not there is replaced by a random-weight stand-in of
#   the same shape built on the spot (tokenizer trained on the passages): its speed and memory are real, its
#   nDCG is noise, and the output says so.
# Exit codes: 0 every check ran, 1 a check failed (its line says why), 2 it cannot run here.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ " $* " != *" --cpu "* ]] && ! { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; }; then
  echo "gpu_check: no NVIDIA GPU here (nvidia-smi finds none); run it on a GPU node, or pass --cpu --tiny for the CPU smoke test" >&2
  exit 2
fi
PY="${PYTHON:-}"
if [[ -z "$PY" ]]; then
  if [[ -x .venv/bin/python ]]; then PY=.venv/bin/python; else PY=python3; fi
fi
SITE=""
if compgen -G ".whl/*.whl" >/dev/null; then
  SITE="${TMPDIR:-/tmp}/gpu_check_site"
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl
fi
export PYTHONPATH="src:.${SITE:+:$SITE}${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
missing=$("$PY" - <<'PY' 2>/dev/null || echo "python itself"
import importlib.util
need = ["torch", "transformers", "accelerate", "tokenizers", "huggingface_hub", "safetensors", "numpy", "pandas", "scipy",
        "sklearn", "statsmodels", "omegaconf", "antlr4", "tqdm", "tenacity", "aiolimiter", "krippendorff", "ir_measures", "pytrec_eval"]
print(" ".join(n for n in need if importlib.util.find_spec(n) is None))
PY
)
if [[ -n "$missing" ]]; then
  echo "gpu_check: $PY lacks: $missing (install them, or put their wheels in ./.whl)" >&2
  exit 2
fi
exec "$PY" -m benchmarks.gpu_check "$@"
