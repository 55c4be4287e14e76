"""``datasets=dl19@A,dl19@B``: two identities of one dataset name in one report is refused, not the last kept."""

from __future__ import annotations

import pytest

from judgebench.compare.base import dataset_identity
from judgebench.exceptions import CompareError


@pytest.mark.parametrize("items", [["dl19@3fa2", "dl19@77c1"], ["dl19@3fa2", "dl19"], ["dl19", "dl20", "dl19@77c1"]])
def test_two_picks_of_one_dataset_name_are_one_line(items):
    with pytest.raises(CompareError, match=r"dl19 is named twice .*pick one \(dl19@<hash prefix>\)"):
        dataset_identity.parse(items)


def test_one_pick_per_name_is_kept():
    assert dataset_identity.parse(["dl19@3fa2", "dl20"]) == (["dl19", "dl20"], {"dl19": "3fa2"})
    assert dataset_identity.parse(["dl19", "dl19"]) == (["dl19", "dl19"], {})  # the same name twice picks nothing
