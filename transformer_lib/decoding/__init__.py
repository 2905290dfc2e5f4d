"""From a trained model to translations, and their score:

    text_checks         as_text_list, warn_unusual_text (what the translator is given)
    search       §6.1   greedy_decode, beam_search (fixed-shape key/value cache, XLA), length_penalty, sampled_decode
    translator          Translator: text in, text out (the tokenizers around the searches), attention weights
    bleu         §6.1   evaluate_bleu, group_references, paired_bootstrap (sacreBLEU)
    back_translation    back_translate: monolingual English -> synthetic (Russian, English) pairs (Sennrich et al. 2016)

Printed in the chapters by `show_source` (the chapter in brackets): edit one, and `make listings`
refreshes the listing that shows it.

    search.beam_loop (8), search.beam_search (8), search.greedy_loop (8)
"""
