"""Loading a local model's weights where they will run, in a precision that does not overflow.

Why a device map: a model built in CPU RAM and then moved with ``.to(device)`` needs its whole size in host
memory first (FLAN-UL2 is ~40 GB in bf16, over a 32 GB SLURM allocation); with ``device_map`` (and
``low_cpu_mem_usage``) each shard goes to its device as it is read. ``device="cuda"`` spreads the model over
the visible GPUs (``device_map="auto"``); ``cuda:N``, ``cpu`` and ``mps`` put all of it on that one device.

Why not fp16 by default: T5 and UL2 overflow in float16 (V100, T4), and the NaN log-probabilities turn
every PRP comparison into a tie. ``dtype="auto"`` is bfloat16 on GPUs that have it natively, float32 on
other GPUs and on the CPU; float16 only when asked.

A model that does not fit the GPUs is an error before any weight is read (from accelerate's size of the model
built on the meta device), never a silent offload to the CPU.
"""

from __future__ import annotations

import logging
from typing import Any

from judgebench.exceptions import ConfigError, ModelDoesNotFit
from judgebench.llm.local import hub
from judgebench.progress import library_bars_off

log = logging.getLogger(__name__)

DTYPES = ("auto", "float32", "bfloat16", "float16")
GPU_HEADROOM = 1.10  # weights x this + 1 GiB must fit: activations, the CUDA context, the key/value caches
GIB = 1024**3


def device_type(device: str) -> str:
    """'cuda:1' -> 'cuda': what the cache key records (the GPU's index does not change a score)."""
    return str(device).split(":", 1)[0]


def resolve_device(device: str) -> str:
    """'auto' -> 'cuda' when a GPU is visible, else 'cpu'; anything else as given."""
    if device != "auto":
        if device_type(device) not in ("cpu", "cuda", "mps"):
            raise ConfigError(f"model_spec.device={device!r}: expected auto, cpu, cuda, cuda:N or mps")
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def gpu_has_bf16(device: str = "cuda") -> bool:
    """Native bfloat16 (compute capability 8.0 on: A100, L4, H100, ...; ROCm), not torch's slow emulation."""
    import torch

    if not torch.cuda.is_available():
        return False
    if torch.version.hip:
        return True
    index = int(device.split(":", 1)[1]) if ":" in device else torch.cuda.current_device()
    return torch.cuda.get_device_capability(index)[0] >= 8


def resolve_dtype(dtype: str, device: str) -> str:
    """The dtype's name; 'auto': bfloat16 on a GPU with native bf16, float32 elsewhere (see the module docstring)."""
    if dtype not in DTYPES:
        raise ConfigError(f"model_spec.dtype={dtype!r}: expected one of {', '.join(DTYPES)}")
    if dtype != "auto":
        return dtype
    if device_type(device) == "cuda":
        return "bfloat16" if gpu_has_bf16(device) else "float32"
    return "float32"


def torch_dtype(name: str) -> Any:
    import torch

    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]


def device_map_for(device: str) -> str | dict[str, str]:
    """'cuda' -> 'auto' (every visible GPU); any single device -> {'': device}."""
    return "auto" if device == "cuda" else {"": device}


def model_class(kind: str) -> Any:
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM

    return AutoModelForSeq2SeqLM if kind == "seq2seq" else AutoModelForCausalLM


def load_config(source: str, gguf_file: str | None) -> Any:
    from transformers import AutoConfig

    extra = {"gguf_file": gguf_file} if gguf_file else {}
    return AutoConfig.from_pretrained(source, **extra, **hub.load_kwargs(source))


def resolve_kind(source: str, gguf_file: str | None, kind: str) -> str:
    """'auto' -> 'seq2seq' for an encoder-decoder config, else 'causal'."""
    if kind != "auto":
        return kind
    return "seq2seq" if load_config(source, gguf_file).is_encoder_decoder else "causal"


def empty_model(config: Any, kind: str) -> Any:
    """The model built on the meta device: its shapes and parameter counts, no memory."""
    from accelerate import init_empty_weights

    with init_empty_weights():
        net = model_class(kind).from_config(config)
    net.tie_weights()  # from_config on the meta device leaves tied embeddings untied: counted twice or thrice otherwise
    return net


def weight_bytes(config: Any, kind: str, dtype: str) -> int:
    """Bytes of the weights in ``dtype`` (accelerate's module sizes of the meta-device model)."""
    from accelerate.utils import compute_module_sizes

    return int(compute_module_sizes(empty_model(config, kind), dtype=torch_dtype(dtype))[""])


def gpu_free_bytes(device: str) -> dict[str, int]:
    """Free memory per GPU the model would be placed on."""
    import torch

    indices = [int(device.split(":", 1)[1])] if ":" in device else range(torch.cuda.device_count())
    return {f"cuda:{i}": int(torch.cuda.mem_get_info(i)[0]) for i in indices}


def check_fits(name: str, dtype: str, needed: int, free: dict[str, int]) -> None:
    """Raise ModelDoesNotFit unless the weights (with headroom) fit into the GPUs' free memory together."""
    want = needed * GPU_HEADROOM + GIB
    have = sum(free.values())
    if want > have:
        gpus = ", ".join(f"{d} {b / GIB:.1f} GiB free" for d, b in free.items()) or "no GPU"
        raise ModelDoesNotFit(
            f"model {name} needs ~{want / GIB:.1f} GiB of GPU memory in {dtype} ({needed / GIB:.1f} GiB of weights "
            f"+ headroom) but {gpus}: ask for a larger GPU or more of them (hydra.launcher.gres / constraint / "
            "gpus_per_node), or a smaller model; it is not offloaded to the CPU"
        )


def load_weights(name: str, source: str, gguf_file: str | None, kind: str, device: str, dtype: str) -> tuple[Any, Any]:
    """(tokenizer, eval-mode model) with every weight loaded straight onto ``device`` in ``dtype``."""
    from transformers import AutoTokenizer

    extra: dict[str, Any] = {"gguf_file": gguf_file} if gguf_file else {}
    extra.update(hub.load_kwargs(source))
    if device_type(device) == "cuda" and not gguf_file:
        check_fits(name, dtype, weight_bytes(load_config(source, gguf_file), kind, dtype), gpu_free_bytes(device))
    try:
        with library_bars_off():  # the stage's own bar is the one shown
            tok = AutoTokenizer.from_pretrained(source, **extra)
            net = (
                model_class(kind)
                .from_pretrained(
                    source, dtype=torch_dtype(dtype), device_map=device_map_for(device), low_cpu_mem_usage=True, **extra
                )
                .eval()
            )
    except OSError as exc:
        if extra.get("local_files_only"):  # the config was there (checked before), some other file is not
            raise hub.not_downloaded(name, str(exc).splitlines()[0][:200]) from exc
        raise
    placed = set(map(str, (getattr(net, "hf_device_map", None) or {}).values()))
    if placed & {"cpu", "disk"} and device_type(device) == "cuda":
        raise ModelDoesNotFit(
            f"model {name}: accelerate placed part of it on {', '.join(sorted(placed))}; "
            "it does not fit the GPUs and would run at CPU speed"
        )
    if tok.pad_token_id is None:  # causal LMs often have none; eos is safe because padding is masked
        tok.pad_token = tok.eos_token if tok.eos_token is not None else tok.unk_token
    tok.padding_side = "left" if kind == "causal" else "right"
    log.info("loaded %s (%s, %s on %s)", name, kind, dtype, device)
    return tok, net
