"""Bulk encoding for :class:`~judgebench.llm.local.transformers_model.TransformersModel`: many prompts, one tokenizer
call.

Why: on a GPU a forward costs microseconds per prompt, so per-prompt Python decides the speed (issue 46:
RankT5 spent ~5.5 ms a prompt outside any arithmetic). Here every list of prompts is

* chat-templated by string assembly around one rendering of the template (the template's "frame": what
  comes before and after the user content), not one Jinja rendering per prompt. The frame is used only
  when the template copies the content verbatim (checked once per system text with whitespace around a
  marker, and again on the first prompt of every call); otherwise each prompt is rendered as before;
* tokenised in ONE call of the fast tokenizer (Rust, batched, without offsets), and each text's ids are memoised on the
  model, so the length check of :func:`render_many` and the scoring that follows tokenise a prompt once;
* given the forced prefix's trailing space exactly as :func:`~judgebench.llm.local.prompt_encoding.with_prefix` gives it
  (the rows whose last token lost the space are re-encoded together, then the space token appended).

The ids are the same as the one-prompt path's (a test compares them); only the work per prompt changes.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from judgebench.llm.local import prompt_encoding
from judgebench.llm.prompts import fill

TransformersModel = Any  # the model that calls (this module is a layer below it and does not import it)
CONTENT_MARK = "\x00judgebench-content\x00"
# texts whose ids are kept per model at least: a scoring chunk and its passages (more when one call brings more)
MEMO_SIZE = 2048


def _frame(model: TransformersModel, system: str | None) -> tuple[str, str] | None:
    """(before, after) the user content in the chat-templated text, or None when the template edits content."""
    frames: dict = model.__dict__.setdefault("_chat_frames", {})
    if system not in frames:
        probe = " \n" + CONTENT_MARK + "\n "
        text = prompt_encoding.chat_text(model, probe, system)[0]
        frames[system] = tuple(text.split(probe)) if text.count(probe) == 1 and text.count(CONTENT_MARK) == 1 else None
    return frames[system]


def chat_texts(model: TransformersModel, prompts: list[str], system: str | None) -> tuple[list[str], bool]:
    """The texts the model reads for ``prompts`` (chat template or system line) and whether special tokens are added."""
    if not model.use_chat_template:
        return ([p if system is None else f"{system}\n\n{p}" for p in prompts]), True
    frame = _frame(model, system)
    if frame is not None and prompts:
        texts = [frame[0] + p + frame[1] for p in prompts]
        if prompt_encoding.chat_text(model, prompts[0], system)[0] == texts[0]:
            return texts, False
    return [prompt_encoding.chat_text(model, p, system)[0] for p in prompts], False


def ids_many(model: TransformersModel, texts: list[str], special: bool) -> list[list[int]]:
    """Token ids of every text: memoised ones looked up, the rest in one batch call of the tokenizer."""
    memo: OrderedDict = model.__dict__.setdefault("_ids_memo", OrderedDict())
    todo = list(dict.fromkeys(t for t in texts if (t, special) not in memo))
    new = dict(zip(todo, _batch_ids(model.tokenizer, todo, special))) if todo else {}
    out = [
        new[t] if t in new else memo[(t, special)] for t in texts
    ]  # before any eviction: a call may pass more than fits
    for text, ids in new.items():
        memo[(text, special)] = ids
    while len(memo) > max(MEMO_SIZE, 2 * len(texts)):  # a call's own texts stay for the scoring that follows its check
        memo.popitem(last=False)
    return out


def _batch_ids(tokenizer: Any, texts: list[str], special: bool) -> list[list[int]]:
    """One batch call: the Rust tokenizer's ``encode_batch_fast`` (no offsets; about half the time of the
    transformers call, which returns the same ids) when the backend pads and truncates nothing, else the
    transformers call."""
    backend = getattr(tokenizer, "_tokenizer", None)
    fast = getattr(backend, "encode_batch_fast", None)
    if (
        getattr(tokenizer, "is_fast", False)
        and fast is not None
        and backend.padding is None
        and backend.truncation is None
    ):
        return [enc.ids for enc in fast(texts, add_special_tokens=special)]
    return [list(ids) for ids in tokenizer(texts, add_special_tokens=special)["input_ids"]]


def _ends_with_space(model: TransformersModel, last: int) -> bool:
    known: dict = model.__dict__.setdefault("_space_end", {})
    if last not in known:
        known[last] = prompt_encoding.ends_with_space(model, [last])
    return known[last]


def with_prefix_many(model: TransformersModel, texts: list[str], prefix: str, special: bool) -> list[list[int]]:
    """:func:`~judgebench.llm.local.prompt_encoding.with_prefix` for many texts: text + prefix, its trailing space
    kept as a token."""
    ids = ids_many(model, [t + prefix for t in texts], special)
    if not prefix or prefix == prefix.rstrip(" "):
        return ids
    lost = [i for i, row in enumerate(ids) if not (row and _ends_with_space(model, row[-1]))]
    space = prompt_encoding.space_id(model) if lost else None
    if space is None:
        return ids
    fixed = ids_many(model, [texts[i] + prefix.rstrip(" ") for i in lost], special)
    out = list(ids)
    for i, row in zip(lost, fixed):
        out[i] = row + [space]
    return out


def encode_many(
    model: TransformersModel, prompts: list[str], forced_prefix: str = "", system: str | None = None
) -> list[tuple[list[int], list[int] | None]]:
    """:meth:`TransformersModel.encode` of every prompt: (input ids, decoder ids or None), tokenised in bulk."""
    texts, special = chat_texts(model, prompts, system)
    if model.kind == "causal":
        return [(ids, None) for ids in with_prefix_many(model, texts, forced_prefix, special)]
    start = model.model.config.decoder_start_token_id
    start = model.tokenizer.pad_token_id if start is None else start
    dec = [start] + (prompt_encoding.with_prefix(model, "", forced_prefix, False) if forced_prefix else [])
    return [(ids, dec) for ids in ids_many(model, texts, special)]


def render_many(
    model: TransformersModel,
    template: str,
    fields: list[dict[str, Any]],
    truncate_field: str,
    *,
    forced_prefix: str = "",
    system: str | None = None,
    prompts: list[str | None] | None = None,
) -> list[tuple[str, bool]]:
    """:meth:`TransformersModel.render` of many field sets: the prompts that fit are checked in one tokenizer
    call; only those over ``max_input_tokens`` take the one-by-one shortening path.  ``prompts[i]``, where given,
    is ``fill(template, fields[i])`` made already by the caller (not filled twice)."""
    given = prompts if prompts is not None else [None] * len(fields)
    prompts = [p if p is not None else fill(template, f) for p, f in zip(given, fields)]
    encoded = encode_many(model, prompts, forced_prefix if model.kind == "causal" else "", system)
    out = []
    for prompt, f, (ids, _) in zip(prompts, fields, encoded):
        if len(ids) <= model.max_input_tokens:
            out.append((prompt, False))
        else:
            out.append(model.render(template, f, truncate_field, forced_prefix=forced_prefix, system=system))
    return out
