"""The study behind the chapter "Since 2017": its windows and its variants."""

import numpy as np
import pytest

import transformer_lib as tl
from transformer_lib.data.tokenizer import END_ID, START_ID
from transformer_lib.training import since_2017


def test_sampled_windows_are_padded_consecutive_windows_drawn_without_repeats():
    ids = [[5, 6, 7, 8, 9], [10, 11], []]  # window 4: room for 2 pieces -> [5 6] [7 8] [9] [10 11]
    expected = {(START_ID, 5, 6, END_ID), (START_ID, 7, 8, END_ID), (START_ID, 9, END_ID, 0),
                (START_ID, 10, 11, END_ID)}
    rows = tl.data.imdb.sampled_windows(ids, 4, count=10, seed=3)
    assert rows.dtype == np.int32 and rows.shape == (4, 4)
    assert {tuple(row) for row in rows} == expected  # every window once, padded with 0
    three = tl.data.imdb.sampled_windows(ids, 4, count=3, seed=3)
    assert three.shape == (3, 4) and len({tuple(row) for row in three}) == 3
    assert (three == tl.data.imdb.sampled_windows(ids, 4, count=3, seed=3)).all()  # the seed fixes the sample
    draws = {tuple(map(tuple, tl.data.imdb.sampled_windows(ids, 4, count=2, seed=s))) for s in range(20)}
    assert len(draws) > 1  # and another seed draws others


def test_the_variants_differ_from_the_papers_block_by_their_switches_alone():
    assert since_2017.VARIANTS["2017"] == {}
    single = [name for name in since_2017.VARIANTS if name not in ("2017", "2024")]
    assert len(single) == 5 and all(len(since_2017.VARIANTS[name]) == 1 for name in single)
    together = {}
    for name in single:
        together.update(since_2017.VARIANTS[name])
    assert since_2017.VARIANTS["2024"] == together  # "2024" is every single change at once
    assert set(together) == set(tl.config.SINCE_2017)


def test_an_unknown_variant_is_refused_with_the_names_to_choose_from():
    with pytest.raises(ValueError, match="choose one of 2017, pre-LN"):
        since_2017.train_variant("2023", 0, since_2017.TOY, 100, None, None)
