"""Score prompts that share a token prefix from one key/value cache of that prefix.

Why: the UMBRELA judge prompt is a long fixed instruction, then the query, then the passage; every
passage of a query repeats the same few hundred tokens before it, and re-running them per pair is most
of the work.  Here the prefix is run once (per model, template and query: the cache is memoised on the
model by its token ids), and each prompt only runs its own tail on top of it.

What is shared is a TOKEN prefix of the rendered, chat-templated, tokenized prompt, never a text
prefix on faith: the caller names the text that comes before the varying field (:func:`text_before`),
its chat-templated form is tokenized alone, and it is used only when those ids are exactly the first
ids of the full prompt (a tokenizer can merge across the boundary).  Otherwise the prompt takes the
ordinary unshared path and ``usage.prefix_fallbacks`` counts it.  Causal models only: an encoder is
bidirectional, so its prefix states depend on what follows.

Batches of tails are right-padded: position ids continue from the prefix length, and each row's logits are read at
its own last real token.  The tails attend ONE copy of the prefix's keys and values
(:mod:`judgebench.llm.local.shared_prefix_attention`); a model whose attention cannot be swapped falls back to a
``DynamicCache`` of the prefix expanded to the batch, whose update copies it per row (``usage.prefix_copy_batches``).
"""

from __future__ import annotations

import itertools
import time
from collections import OrderedDict
from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np

from judgebench.llm.local import encoding
from judgebench.llm.prompts import fill

# Every function takes the TransformersModel that calls it (``model``): typed as Any so that this module, a layer
# below the model, does not import it back.
TransformersModel = Any

PREFIX_END = "\x00judgebench-prefix-end\x00"
MEMO_SIZE = 4  # prefixes kept per model: a query's passages may come in several scoring chunks


def text_before(template: str, fields: dict[str, Any], field: str) -> str:
    """The filled ``template`` up to where ``fields[field]`` starts, trailing whitespace dropped.

    Dropping the whitespace keeps the boundary where tokenizers do not merge (``Passage:`` then
    `` Indoor``); the token check in :func:`prefix_lengths` catches any case where they still do.
    """
    filled = fill(template, {**fields, field: PREFIX_END})
    return filled.split(PREFIX_END, 1)[0].rstrip()


def _prefix_ids(model: TransformersModel, prefixes: list[str], system: str | None) -> dict[str, list[int] | None]:
    """Token ids of the chat-templated text that precedes the rest of a prompt starting with each prefix (None where
    the template does not keep the text whole): chat-templated and tokenised together
    (:mod:`judgebench.llm.local.encoding`: one template rendering and one tokenizer call for all of them, not one
    each)."""
    texts, special = encoding.chat_texts(model, [prefix + PREFIX_END for prefix in prefixes], system)
    heads = {prefix: text.split(PREFIX_END, 1)[0] for prefix, text in zip(prefixes, texts) if PREFIX_END in text}
    ids = dict(zip(heads, encoding.ids_many(model, list(heads.values()), special)))
    return {prefix: ids.get(prefix) for prefix in prefixes}


def prefix_lengths(
    model: TransformersModel,
    prompts: list[str],
    prefixes: list[str | None],
    encoded: list[list[int]],
    system: str | None,
) -> list[int]:
    """Per prompt, how many of its leading ids are a verified shared prefix (0: score it unshared)."""
    starts = [bool(prefix) and prompt.startswith(prefix) for prompt, prefix in zip(prompts, prefixes)]
    memo = _prefix_ids(model, list(dict.fromkeys(p for p, ok in zip(prefixes, starts) if ok)), system)
    out = []
    for ok, prefix, ids in zip(starts, prefixes, encoded):
        n = 0
        if ok:
            p = memo[prefix]
            if p and len(p) < len(ids) and ids[: len(p)] == p:
                n = len(p)
        if n:
            model.usage.prefix_shared += 1
        elif prefix:
            model.usage.prefix_fallbacks += 1
        out.append(n)
    return out


def _forward_params(model: TransformersModel) -> Any:
    import inspect

    return inspect.signature(model.model.forward).parameters


def _cache_arg(model: TransformersModel) -> str:
    """``cache`` in newer transformers, ``past_key_values`` (deprecated there) in older ones."""
    return "cache" if "cache" in _forward_params(model) else "past_key_values"


def _common_length(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def _prefix_kv(model: TransformersModel, ids: tuple[int, ...]) -> list[tuple[Any, Any]]:
    """Per layer (keys, values) of the prefix, batch 1; memoised on the model, least recently used dropped.

    A new prefix starts from the memoised one it shares most leading ids with (every query's prefix repeats the
    instruction; PRP's (query, first passage) prefixes repeat the query's): only the ids after the common part
    are run, on top of its states, which a causal model makes the same as running the whole prefix."""
    import torch
    from transformers import DynamicCache

    memo: OrderedDict = model.__dict__.setdefault("_prefix_memo", OrderedDict())
    if ids in memo:
        memo.move_to_end(ids)
        return memo[ids]
    t0 = time.perf_counter()
    base, common = None, 0
    for other in memo:
        n = _common_length(ids, other)
        if n > common:
            base, common = other, n
    common = min(common, len(ids) - 1)  # at least one id is run: its states are what the forward returns
    run = ids[common:]
    x = torch.tensor([run], dtype=torch.long, device=model.device)
    kw: dict[str, Any] = {
        "input_ids": x,
        "attention_mask": torch.ones((1, len(ids)), dtype=torch.long, device=model.device),
        "use_cache": True,
    }
    if common:
        kw[_cache_arg(model)] = DynamicCache(
            ddp_cache_data=[(k[:, :, :common], v[:, :, :common]) for k, v in memo[base]], config=model.model.config
        )
        if model._has_pos:
            kw["position_ids"] = torch.arange(common, len(ids), device=model.device).unsqueeze(0)
    if model._has_keep:
        kw["logits_to_keep"] = 1
    with torch.inference_mode():
        result = model.model(**kw)
    cache = result.cache if "cache" in _forward_params(model) else result.past_key_values
    memo[ids] = [(layer.keys, layer.values) for layer in cache.layers]
    model.usage.input_tokens += len(run)
    model.usage.padded_tokens += len(run)
    model.usage.prefix_tokens += len(run)
    model.usage.batches += 1
    model.usage.seconds += time.perf_counter() - t0
    while len(memo) > MEMO_SIZE:
        memo.popitem(last=False)
    return memo[ids]


def shared_last_logits(
    model: TransformersModel, encoded: list[list[int]], lengths: list[int], pick: Any
) -> dict[int, np.ndarray]:
    """``pick(next-token float32 logits)`` for every prompt with a shared prefix (lengths[i] > 0), by index."""
    import torch

    groups: dict[tuple[int, ...], list[int]] = {}
    for i, n in enumerate(lengths):
        if n:
            groups.setdefault(tuple(encoded[i][:n]), []).append(i)
    out: dict[int, np.ndarray] = {}
    for prefix, members in groups.items():
        kv = _prefix_kv(model, prefix)
        p = len(prefix)
        # batched by the tails' lengths (what is computed and padded); the prefix is attended, not computed
        for part in model._batches([len(encoded[i]) - p for i in members]):
            chunk = [members[j] for j in part]
            t0 = time.perf_counter()
            tails = [encoded[i][p:] for i in chunk]
            lengths = np.fromiter((len(t) for t in tails), dtype=np.int64, count=len(tails))
            b, width = len(tails), int(lengths.max())
            real = np.arange(width) < lengths[:, None]  # RIGHT padding: a row's pads come after its last real token
            ids_np = np.full((b, width), model.tokenizer.pad_token_id, dtype=np.int64)
            ids_np[real] = np.fromiter(itertools.chain.from_iterable(tails), dtype=np.int64, count=int(lengths.sum()))
            ids, mask = torch.from_numpy(ids_np), torch.from_numpy(real.astype(np.int64))
            rows = _last_rows(model, kv, ids, mask, torch.from_numpy(lengths - 1))
            with torch.inference_mode():
                vals = pick(rows.float()).cpu().numpy()
            for r, i in enumerate(chunk):
                out[i] = vals[r]
            model.usage.prompts += b
            model.usage.input_tokens += int(mask.sum())
            model.usage.padded_tokens += int(mask.numel())
            model.usage.batches += 1
            model.usage.seconds += time.perf_counter() - t0
    return out


def _last_rows(model: TransformersModel, kv: list[tuple[Any, Any]], ids: Any, mask: Any, last: Any) -> Any:
    """(b, vocabulary) logits of each tail at its own last real token (``last[row]``, right padding).

    The LM head is given only those b hidden states (:func:`_last_hidden_only`), not every column some row ends at:
    with ``logits_to_keep`` as the set of those columns it computed b × k rows of logits (k distinct last positions)
    and the b wanted ones were gathered after; on the CPU that gather and the freeing of the b × k × vocabulary
    block were a fifth of the judge's work outside the network.  A model where the hook does not take (checked on
    its first batch) keeps that way."""
    import torch

    if model.__dict__.get("_last_hidden_hook") is not False:
        copies = model.usage.prefix_copy_batches
        with _last_hidden_only(model.model, last) as fired:
            logits = _tails_logits(model, kv, ids, mask, 1)
        if fired == [True] and logits.shape[1] == 1:
            model.__dict__["_last_hidden_hook"] = True
            return logits[:, 0]
        model.__dict__.setdefault("_last_hidden_hook", False)  # untried and failed: the columns way from now on
        model.usage.prefix_copy_batches = copies  # the batch runs again below: the failed try's forward is not counted
    keep = torch.unique(last)  # the positions some row ends at: logits for those columns only
    col = torch.searchsorted(keep, last) if model._has_keep else last
    logits = _tails_logits(model, kv, ids, mask, keep)
    return logits[torch.arange(len(last)), col.to(logits.device)]


@contextmanager
def _last_hidden_only(net: Any, last: Any) -> Iterator[list[bool]]:
    """While open, the network's base model hands its head only row r's hidden state at position ``last[r]``
    ((b, 1, hidden) in place of (b, t, hidden)); yields a list that holds True when the LAST forward of the base
    model was narrowed (it is emptied as each forward starts: a forward that failed and was run again the other way
    does not count). A network without a separate base model, or whose base model returns no
    ``last_hidden_state``, is left as it is (the list stays empty and the caller takes the other way)."""
    import torch

    fired: list[bool] = []
    base = getattr(net, "base_model", net)
    if base is net:
        yield fired
        return

    def hook(module: Any, args: Any, output: Any) -> Any:
        hidden = getattr(output, "last_hidden_state", None)
        if hidden is None or hidden.dim() != 3 or hidden.shape[0] != len(last):
            return None
        output.last_hidden_state = hidden[
            torch.arange(len(last), device=hidden.device), last.to(hidden.device)
        ].unsqueeze(1)
        fired.append(True)
        return output

    handles = [base.register_forward_pre_hook(lambda module, args: fired.clear()), base.register_forward_hook(hook)]
    try:
        yield fired
    finally:
        for handle in handles:
            handle.remove()


def _tails_logits(model: TransformersModel, kv: list[tuple[Any, Any]], ids: Any, mask: Any, keep: Any) -> Any:
    """Logits of a right-padded batch of tails on top of the prefix ``kv``: attended as ONE copy
    (:mod:`judgebench.llm.local.shared_prefix_attention`) where the model allows it, else from a ``DynamicCache`` whose
    update concatenates [prefix; tail] per row.  The first batch of a model finds out which; ``model.usage``
    keeps the largest key/value bytes one forward read and how many forwards copied the prefix per row."""
    import torch
    from transformers import DynamicCache

    from judgebench.llm.local import shared_prefix_attention as spa

    b, width = ids.shape
    p = kv[0][0].shape[2]
    kw: dict[str, Any] = {
        "input_ids": ids.to(model.device),
        "attention_mask": torch.cat([torch.ones((b, p), dtype=torch.long), mask], dim=1).to(model.device),
    }
    if model._has_pos:
        kw["position_ids"] = (p + torch.arange(width)).expand(b, -1).to(model.device)
    if model._has_keep:  # an int (the last columns) or a tensor of columns
        kw["logits_to_keep"] = keep if isinstance(keep, int) else keep.to(model.device)
    state = model.__dict__.get("_shared_attention")  # None: not tried yet on this model
    if model._has_pos and state is not False:
        try:
            logits, read = spa.run_tails(model.model, kv, kw)
        except (spa.Unsupported, TypeError) as e:
            if state:  # it worked on an earlier batch: this is a real error, not a missing feature
                raise
            model.__dict__["_shared_attention"], model.__dict__["_shared_attention_why"] = False, str(e)
        else:
            model.__dict__["_shared_attention"] = True
            model.usage.prefix_kv_bytes = max(model.usage.prefix_kv_bytes, read.kv_bytes)
            return logits
    cache = DynamicCache(
        ddp_cache_data=[(k.expand(b, -1, -1, -1), v.expand(b, -1, -1, -1)) for k, v in kv], config=model.model.config
    )
    kw.update({_cache_arg(model): cache, "use_cache": True})
    with torch.inference_mode():
        logits = model.model(**kw).logits
    held = sum(
        k.untyped_storage().nbytes() + v.untyped_storage().nbytes()
        for k, v in ((x.keys, x.values) for x in cache.layers)
    )
    model.usage.prefix_kv_bytes = max(model.usage.prefix_kv_bytes, held)
    model.usage.prefix_copy_batches += 1
    return logits
