"""The exercises' checks, one module per part of the book: call `check_<name>(your_answer)`.

Each check runs your answer on several inputs (a real case first), compares it with an independent
reference (float64 NumPy written from the paper, or the library's layer holding the same weights),
and prints "Correct: ...", or "Not written yet: ..." while your answer still raises
NotImplementedError (the student edition's stubs do), or raises an AssertionError that names the
input, shows what differs and, for the common mistakes it recognises, says which one it is. An
exercise that asks you to write something refuses an answer that calls the library's own version.

`passed(check)` tells a later cell whether an exercise was solved in this kernel, so a chapter can
use your layer where you wrote it and the library's where you did not (`yours_or_library`).
"""

from transformer_lib.book.exercises._core import RESULTS, passed
from transformer_lib.book.exercises.attention import (
    check_attention,
    check_causal_self_attention,
    check_self_attention_layer,
)
from transformer_lib.book.exercises.basics import (
    check_batch_padding_share,
    check_combined_mask,
    check_concatenated_encoding,
    check_group_pairs,
    check_look_ahead_mask,
    check_positional_encoding,
)
from transformer_lib.book.exercises.bert import check_masked_max, check_nucleus_sampling, check_whole_word_masking
from transformer_lib.book.exercises.decoding import check_beam_step, check_greedy_translator, check_length_penalty
from transformer_lib.book.exercises.heads import (
    check_merge_heads,
    check_multi_head_attention,
    check_per_head_attention,
    check_split_heads,
)
from transformer_lib.book.exercises.layers import (
    check_add_norm,
    check_decoder_layer,
    check_encoder_layer_parameters,
    check_feed_forward,
)
from transformer_lib.book.exercises.modern import (
    check_grouped_query_attention,
    check_online_softmax_update,
    check_rotary_embedding,
    check_smollm2_with_your_blocks,
)
from transformer_lib.book.exercises.training import check_accumulated_step, check_fit_step, check_schedule
from transformer_lib.book.exercises.transformer import check_transformer


def yours_or_library(check, yours, library):
    """`yours` if `check` accepted it in this kernel, else `library`, saying which one is used."""
    if passed(check):
        print(f"Using your {getattr(yours, '__name__', yours)} ({check.__name__} accepted it).")
        return yours
    print(f"Using the library's {getattr(library, '__name__', library)}: {check.__name__} has not accepted yours yet.")
    return library


__all__ = [name for name in dir() if name.startswith("check_")] + ["RESULTS", "passed", "yours_or_library"]
