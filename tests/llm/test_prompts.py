"""prompts.fill (the template cut once, each prompt joined) against a regex substitution written here: random
templates with stray braces, doubled braces, unknown fields, and values that themselves hold {field} (never
substituted again)."""

import random
import re

import pytest

from judgebench.llm.prompts import fill


def substituted(template: str, values: dict[str, str]) -> str:
    if not values:
        return template
    pattern = re.compile("|".join(re.escape("{" + name + "}") for name in values))
    return pattern.sub(lambda m: str(values[m.group(0)[1:-1]]), template)


@pytest.mark.parametrize("seed", range(5))
def test_fill_equals_one_regex_substitution(seed):
    rng = random.Random(seed)
    for _ in range(2000):
        names = rng.sample(["query", "passage", "q", "doc1", "doc2"], rng.randint(1, 4))
        parts = [
            rng.choice(["a", " ", "{", "}", "{{", "}}", "{zz}", "{" + rng.choice(names) + "}"])
            for _ in range(rng.randint(0, 12))
        ]
        template = "".join(parts)
        values = {name: rng.choice(["V", "{query}", "{passage}", "{", "", "x}y", 7]) for name in names}
        assert fill(template, values) == substituted(template, values), (template, values)


def test_a_value_holding_a_field_is_not_filled_again():
    assert fill("{query}|{passage}", {"query": "{passage}", "passage": "P"}) == "{passage}|P"
    assert fill("{{query}}", {"query": "Q"}) == "{Q}"
    assert fill("no fields", {"query": "Q"}) == "no fields"
    assert fill("{query}", {}) == "{query}"
