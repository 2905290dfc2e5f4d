"""The paper's boxes (Figure 1), one module each, bottom to top:

    positional_encoding  §3.5   positional_encoding, PositionalEmbedding
    masks                §3.2.3 padding_mask, look_ahead_mask, decoder_mask (1.0 = blocked)
    attention            §3.2   scaled_dot_product_attention (Eq. 1), MultiHeadAttention
    feed_forward         §3.3   FeedForward
    add_norm             §5.4   AddNorm (post-LN or pre-LN)
    encoder              §3.1   EncoderLayer, and Stack: what the encoder and decoder stacks share
    decoder              §3.1   DecoderLayer, Decoder (with the key/value cache for decoding)

Each layer takes plain arguments (`MultiHeadAttention(d_model, num_heads)`), so a chapter can build
one on its own; the models above pass theirs from one `TransformerConfig`.
"""
