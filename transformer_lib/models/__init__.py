"""Whole models built from the layers, their sizes in one `TransformerConfig` (`transformer_lib.config`):

    transformer     §3  Transformer (encoder-decoder, Figure 1), count_parameters
    language_model      LanguageModel (the decoder alone, GPT's idea), generate (greedy, temperature, top-k)
    modern_language_model  ModernLanguageModel: the same with the changes since 2017, each switched on by an argument
    classifier          TransformerClassifier (the encoder and masked mean pooling)
    bert                mask_tokens (BERT's 80/10/10), MaskedLanguageModel, classifier_from_pretrained

Printed in the chapters by `show_source` (the chapter in brackets): edit one, and `make listings`
refreshes the listing that shows it.

    bert.MaskedLanguageModel.call (9), bert.classifier_from_pretrained (9), bert.mask_tokens (9),
    classifier.TransformerClassifier.call (9), classifier.masked_mean (9),
    language_model.DecoderOnlyLayer.call (9), language_model.next_token (9),
    modern_language_model.ModernBlock.call (10), modern_language_model.ModernBlock.residual (10),
    modern_language_model.ModernBlock.self_attention (10), transformer.Transformer.call (6)
"""
