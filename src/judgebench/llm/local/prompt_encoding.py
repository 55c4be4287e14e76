"""One prompt to the ids a local model scores: the chat template, the forced prefix and its trailing space, the single
token a candidate stands for, and the document shortened so the prompt fits.

Why apart from the model: these are the details that silently break next-token scoring (a candidate that is really
two tokens, an unknown word mapped to ``<unk>``, a prompt truncated through the query, a forced prefix whose trailing
space the tokenizer dropped), and they depend on the tokenizer alone, not on the forward pass. Each function takes the
:class:`~judgebench.llm.local.transformers_model.TransformersModel` first and is that class's method as it stands;
:mod:`judgebench.llm.local.encoding` does the same for many prompts in one tokenizer call (and gives the same ids).
"""

from __future__ import annotations

from typing import Any

from judgebench.exceptions import ConfigError
from judgebench.llm.prompts import fill

TransformersModel = Any  # the model that calls (this module is a layer below it and does not import it)
SPACE_MARKERS = (" ", "\u0120", "\u2581")  # a literal space, byte-level BPE 'Ġ', SentencePiece '▁'


def chat_text(model: TransformersModel, prompt: str, system: str | None) -> tuple[str, bool]:
    """The input text and whether special tokens must still be added (never on a chat-templated text)."""
    if not model.use_chat_template:
        return (prompt if system is None else f"{system}\n\n{prompt}"), True
    msgs = ([{"role": "system", "content": system}] if system is not None else []) + [
        {"role": "user", "content": prompt}
    ]
    return model.tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True), False


def token_ids(model: TransformersModel, text: str, special: bool) -> list[int]:
    return list(model.tokenizer(text, add_special_tokens=special)["input_ids"])


def ends_with_space(model: TransformersModel, ids: list[int]) -> bool:
    tok = model.tokenizer.convert_ids_to_tokens(ids[-1]) if ids else ""
    return (tok or "").endswith(SPACE_MARKERS) or model.tokenizer.decode(ids[-1:]).endswith(" ")


def with_prefix(model: TransformersModel, text: str, prefix: str, special: bool) -> list[int]:
    """Tokenize text+prefix; keep a trailing space of the prefix as its own token when the tokenizer dropped it.

    After ``score: `` a byte-level BPE model puts the space first (" 0" = 'Ġ' '0'), so the digit is
    only readable once the space token is part of the prompt.
    """
    ids = token_ids(model, text + prefix, special)
    if prefix and prefix != prefix.rstrip(" ") and not ends_with_space(model, ids):
        space = space_id(model)
        if space is not None:
            ids = token_ids(model, text + prefix.rstrip(" "), special) + [space]
    return ids


def space_id(model: TransformersModel) -> int | None:
    """The token of a lone space (looked up once per model), or None when the vocabulary has none."""
    if not hasattr(model, "_space"):
        model._space = None
        for cand in (" ", "\u0120", "\u2581"):
            try:
                model._space = token_id(model, cand)
                break
            except ValueError:
                continue
    return model._space


def encode(
    model: TransformersModel, prompt: str, forced_prefix: str = "", system: str | None = None
) -> tuple[list[int], list[int] | None]:
    """(input ids, decoder ids or None) exactly as scored: chat template, forced prefix, space fix."""
    text, special = chat_text(model, prompt, system)
    if model.kind == "causal":
        return with_prefix(model, text, forced_prefix, special), None
    start = model.model.config.decoder_start_token_id
    start = model.tokenizer.pad_token_id if start is None else start
    dec = [start] + (with_prefix(model, "", forced_prefix, False) if forced_prefix else [])
    return token_ids(model, text, special), dec


def token_id(model: TransformersModel, candidate: str) -> int:
    """The single token id a candidate string stands for ('yes', ' Yes', '0', 'Ġ', '<extra_id_10>', ...).

    Tokenized first (so ' Yes' becomes 'ĠYes' in byte-level BPE and 'yes' becomes '▁yes' in
    SentencePiece), then looked up as a raw vocabulary entry.  Two tokens, or an unknown word
    silently mapped to the unknown id, are errors: they would read the wrong probability.
    """
    tok = model.tokenizer
    unk = tok.unk_token_id
    ids = token_ids(model, candidate, False)
    if len(ids) == 1 and (ids[0] != unk or candidate == tok.unk_token):
        return ids[0]
    raw = tok.convert_tokens_to_ids(candidate)
    if raw is not None and (raw != unk or candidate == tok.unk_token):
        return int(raw)
    pieces = tok.convert_ids_to_tokens(ids)
    if unk is not None and unk in ids:
        raise ConfigError(
            f"candidate {candidate!r} is not in the vocabulary of {model.name}: it tokenizes to "
            f"{pieces} (the unknown token {tok.unk_token!r})"
        )
    raise ConfigError(
        f"candidate {candidate!r} is not a single token for {model.name}: it tokenizes to {pieces}; "
        "pass a string that is one token (or the raw token, e.g. 'Ġ0' / '▁0')"
    )


def render(
    model: TransformersModel,
    template: str,
    fields: dict[str, Any],
    truncate_field: str,
    *,
    forced_prefix: str = "",
    system: str | None = None,
) -> tuple[str, bool]:
    """Fill ``template`` (``{field}`` placeholders, filled by llm.prompts.fill) so the encoded input fits
    ``max_input_tokens``.

    Only ``fields[truncate_field]`` (the document) is shortened, token-wise from its end; the query
    and the instructions are never cut.  Returns (prompt, was_truncated); truncations are counted in
    ``model.truncated``.  A prompt that does not fit even with an empty document is an error.
    """

    def length(value: str) -> int:
        prompt = fill(template, {**fields, truncate_field: value})
        ids, dec = encode(model, prompt, forced_prefix if model.kind == "causal" else "", system)
        return len(ids)

    budget, text = model.max_input_tokens, str(fields[truncate_field])
    n = length(text)
    if n <= budget:
        return fill(template, fields), False
    if length("") > budget:
        raise ConfigError(
            f"prompt is {length('')} tokens without any {truncate_field!r} text, over "
            f"max_input_tokens={budget}: the query or instructions are too long"
        )
    tokenizer = model.tokenizer
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=tokenizer.is_fast)
    ids = enc["input_ids"]
    keep = max(0, len(ids) - (n - budget))
    while True:  # re-tokenizing at the cut can merge differently: shrink until it fits
        if tokenizer.is_fast:
            cut = text[: enc["offset_mapping"][keep - 1][1]] if keep > 0 else ""
        else:
            cut = tokenizer.decode(ids[:keep], skip_special_tokens=True)
        n = length(cut)
        if n <= budget:
            break
        keep = max(0, keep - max(1, n - budget))
    model.truncated += 1
    return fill(template, {**fields, truncate_field: cut}), True
