"""The paper's boxes (Figure 1), one module each, bottom to top:

    positional_encoding  §3.5   positional_encoding, PositionalEmbedding
    masks                §3.2.3 padding_mask, look_ahead_mask, decoder_mask (1.0 = blocked)
    attention            §3.2   scaled_dot_product_attention (Eq. 1), MultiHeadAttention
    feed_forward         §3.3   FeedForward
    add_norm             §5.4   AddNorm (post-LN or pre-LN)
    encoder              §3.1   EncoderLayer, and Stack: what the encoder and decoder stacks share
    decoder              §3.1   DecoderLayer, Decoder (with the key/value cache for decoding)

and what changed in the block since 2017 (the chapter "Since 2017"), each a drop-in for one box above:

    rms_norm                    RMSNorm (Zhang & Sennrich 2019), for LayerNorm
    rotary                      RotaryEmbedding (Su et al. 2021), positions rotating the queries and keys
    swiglu                      SwiGLUFeedForward (Shazeer 2020), a gated feed-forward network
    grouped_query_attention     GroupedQueryAttention (Shazeer 2019; Ainslie et al. 2023), fewer key/value heads
    blockwise_attention         blockwise_attention: Eq. 1 block by block, with an online softmax (FlashAttention's idea)

Each layer takes plain arguments (`MultiHeadAttention(d_model, num_heads)`), so a chapter can build
one on its own; the models above pass theirs from one `TransformerConfig`.
"""
