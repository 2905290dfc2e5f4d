"""Diagrams the chapters draw with code (our own drawings; no figure is copied from the paper).

`architecture_diagram(highlight=...)` draws the whole encoder-decoder of §3 as boxes and arrows,
with the parts a chapter is about in colour and the rest in grey: every chapter calls the same
function, so the reader always sees where the current piece sits.

The "idea" diagrams each draw one mechanism:

    masks_diagram                padding, look-ahead and combined masks (chapter 4)   masks.py
    lookup_diagram               a dict lookup against attention's soft one (ch. 3)   lookup.py
    token_flow_diagram           one token's query meeting every key (chapter 3)      lookup.py
    qkv_diagram                  scaled dot-product attention as a flow (chapter 3)   attention.py
    heads_diagram                per-head W_i^Q, W_i^K, W_i^V, Eq. 1, Concat, W^O (ch. 5) attention.py
    layer_norm_placement_diagram post-LN and pre-LN sub-layers (chapter 6)            layer_norm.py
    teacher_forcing_diagram      decoder input vs labels in training (chapter 7)      teacher_forcing.py
    kv_cache_diagram             the growing key/value cache (chapter 8)              decoding.py
    beam_tree_diagram            a small beam search, beam size 2 (chapter 8)         decoding.py
    block_2017_and_today_diagram the paper's block beside a Llama-style one (Since 2017) modern.py

Every function takes `ax=None` (draw into a new figure) and returns the matplotlib Axes. Each patch
has a `gid` naming what it stands for, so the tests can count and check the drawing. The colours and
the small drawing helpers they share are in `_draw.py`.
"""

from transformer_lib.book.diagrams._draw import EDGE, HIGHLIGHT, MUTED
from transformer_lib.book.diagrams.architecture import PARTS, architecture_diagram
from transformer_lib.book.diagrams.attention import heads_diagram, qkv_diagram
from transformer_lib.book.diagrams.decoding import BEAM_MODEL, beam_tree_diagram, kv_cache_diagram
from transformer_lib.book.diagrams.layer_norm import layer_norm_placement_diagram
from transformer_lib.book.diagrams.lookup import lookup_diagram, token_flow_diagram
from transformer_lib.book.diagrams.masks import masks_diagram
from transformer_lib.book.diagrams.modern import block_2017_and_today_diagram
from transformer_lib.book.diagrams.teacher_forcing import teacher_forcing_diagram

__all__ = [
    "lookup_diagram", "token_flow_diagram",
    "BEAM_MODEL", "EDGE", "HIGHLIGHT", "MUTED", "PARTS",
    "architecture_diagram", "beam_tree_diagram", "block_2017_and_today_diagram", "heads_diagram", "kv_cache_diagram",
    "layer_norm_placement_diagram", "masks_diagram", "qkv_diagram", "teacher_forcing_diagram",
]
