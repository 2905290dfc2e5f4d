"""The paper's boxes (Figure 1), one module each, bottom to top:

    positional_encoding  §3.5   positional_encoding, PositionalEmbedding
    masks                §3.2.3 padding_mask, look_ahead_mask, decoder_mask (1.0 = blocked)
    attention            §3.2   scaled_dot_product_attention (Eq. 1), MultiHeadAttention (and, since
                                2017, GroupedQueryAttention: fewer key/value heads; Shazeer 2019, Ainslie et al. 2023)
    feed_forward         §3.3   FeedForward
    add_norm             §5.4   AddNorm (post-LN or pre-LN)
    stack                §3.1   BaseTransformerLayer and Stack: what the encoder and decoder stacks share
    encoder              §3.1   EncoderLayer, Encoder
    decoder              §3.1   DecoderLayer, Decoder
    decoder_only                DecoderOnlyLayer, DecoderOnly: the decoder alone (GPT), the language model's block,
                                with the switches since 2017 (`TransformerConfig`'s rms_norm, rotary, swiglu, num_kv_heads)
    kv_cache                    the key/value cache of decoding (chapter 8): start_caches, write_slots,
                                slot_mask, cached_self_attention, step_layers; the decoder's and the
                                language models' one cache

and what changed in the block since 2017 (the chapter "Since 2017"), each a drop-in for one box above:

    rms_norm                    RMSNorm (Zhang & Sennrich 2019), for LayerNorm
    rotary                      RotaryEmbedding (Su et al. 2021), positions rotating the queries and keys
    swiglu                      SwiGLUFeedForward (Shazeer 2020), a gated feed-forward network
    blockwise_attention         blockwise_attention: Eq. 1 block by block, with an online softmax (FlashAttention's idea)

Each layer takes plain arguments (`MultiHeadAttention(d_model, num_heads)`), so a chapter can build
one on its own; the models above pass theirs from one `TransformerConfig`.

Printed in the chapters by `show_source` (the chapter in brackets): edit one, and `make listings`
refreshes the listing that shows it.

    add_norm.AddNorm (6), add_norm.AddNorm.call (10), attention.MultiHeadAttention.attend_heads (5, 10),
    attention.MultiHeadAttention.call (5), attention.scaled_dot_product_attention (3),
    blockwise_attention.blockwise_backward (10), blockwise_attention.blockwise_forward (10),
    blockwise_attention.online_softmax_update (10),
    decoder.Decoder.call (6), decoder.DecoderLayer.call (6), decoder.DecoderLayer.step (8),
    decoder_only.DecoderOnlyLayer.attend_to_itself (10), decoder_only.DecoderOnlyLayer.call (9, 10),
    encoder.Encoder.call (6), encoder.EncoderLayer.call (6), feed_forward.FeedForward (6),
    kv_cache.cached_self_attention (8), kv_cache.write_slots (8), masks.padding_mask (4),
    positional_encoding.PositionalEmbedding.call (2), positional_encoding.positional_encoding (2),
    rms_norm.RMSNorm.call (10), rotary.RotaryEmbedding.call (10), swiglu.SwiGLUFeedForward.call (10)
"""
