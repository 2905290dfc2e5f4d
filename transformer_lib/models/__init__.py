"""Whole models built from the layers, their sizes in one `TransformerConfig` (`transformer_lib.config`):

    transformer     §3  Transformer (encoder-decoder, Figure 1), count_parameters
    language_model      LanguageModel (the decoder alone, GPT's idea), generate (greedy, temperature, top-k)
    modern_language_model  ModernLanguageModel: the same with the changes since 2017, each switched on by an argument
    classifier          TransformerClassifier (the encoder and masked mean pooling)
    bert                mask_tokens (BERT's 80/10/10), MaskedLanguageModel, classifier_from_pretrained
"""
