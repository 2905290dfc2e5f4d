"""Whole models built from the layers, their sizes in one `TransformerConfig` (`transformer_lib.config`):

    transformer     §3  Transformer (encoder-decoder, Figure 1), count_parameters
    language_model      LanguageModel (the decoder alone, GPT's idea, with the changes since 2017 as config
                        fields; ModernLanguageModel: the same with every switch off by default), generate
                        (greedy, temperature, top-k; compiled_step)
    gguf                load_gguf (a llama-architecture GGUF file, SmolLM2-135M-Instruct by default, into a
                        LanguageModel whose config says what the file's header says), GGUFTokenizer (its byte-level
                        BPE), chat_prompt (SmolLM2-Instruct's chat template)
    legacy_weights      the since-2017 model's weight files from before it was LanguageModel, read into it
    classifier          TransformerClassifier (the encoder and masked mean pooling)
    bert                mask_tokens (BERT's 80/10/10), MaskedLanguageModel, classifier_from_pretrained

Printed in the chapters by `show_source` (the chapter in brackets): edit one, and `make listings`
refreshes the listing that shows it.

    bert.MaskedLanguageModel.call (9), bert.classifier_from_pretrained (9), bert.mask_tokens (9),
    classifier.TransformerClassifier.call (9), classifier.masked_mean (9), gguf.chat_prompt (10),
    gguf.gguf_config (10), language_model.next_token (9), transformer.Transformer.call (6)
"""
