"""Text in, batches of token ids out:

    downloads   pinned, checksum-verified files, or the offline folder TRANSFORMER_BOOK_DATA
    splits      leak-free train/validation/test splits (connected components of shared sentences)
    synthetic   numbers in Russian words -> English words, a corpus generated in code
    ted         the TFDS ted_hrlr_translate pairs (the seed articles' corpus)
    back_translations  the back-translated pairs' file (read_back_translations, write_back_translations)
    corpora     §5.1 load_parallel_corpus (Tatoeba, WMT news, SMARTool, back-translations, TED, synthetic; both
                directions), monolingual_english
    tokenizer   §5.1 SubwordTokenizer (SentencePiece BPE; 0 = pad, 1 = start, 2 = end, 3 = unknown)
    batching    §5.1 train_tokenizers, make_batches (length bucketing), padding_fraction
    imdb_archive  the IMDB reviews' files (Maas et al. 2011): the tarball, its URL lists, the 2,000-review sample
    imdb        load_imdb (split by movie), make_review_batches, review_windows (chapter 9)

Printed in the chapters by `show_source` (the chapter in brackets): edit one, and `make listings`
refreshes the listing that shows it.

    batching.default_bucket_boundaries (appendix), batching.padding_fraction (1)
"""
