"""From a corpus to a trained translator:

    objective    §5.3-4 TransformerSchedule, make_optimizer, masked_loss, masked_accuracy, perplexity
    loop         §5.3-4 train_step, train (the loop, on TensorFlow)
    checkpoints         make_checkpoint, resume (the newest intact checkpoint), the epoch history
    selection    §6.1   keep the best epoch, average the last ones: select_weights
    run_lock            one training run per folder at a time
    run_folder          a run's folder: the settings compared before it resumes, the record of a finished run
    recipe              Recipe (every setting of a run), train_translator: corpus -> saved translator
    since_2017          the chapter "Since 2017"'s study: each change to the block, trained on the same reviews

Printed in the chapters by `show_source` (the chapter in brackets): edit one, and `make listings`
refreshes the listing that shows it.

    loop.train_step (7), objective.TransformerSchedule (7), objective._per_token_loss (7),
    objective.masked_loss (7), recipe.train_translator (7), selection.select_weights (7),
    since_2017.train_variant (10)
"""
