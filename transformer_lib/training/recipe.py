"""The whole recipe of chapter 7 as one object (`Recipe`) and in one call: corpus -> tokenizers ->
batches -> model -> training -> a saved translator (`train_translator`, the CLI's `train`).

A run lives in one directory: `checkpoints/` (with the recipe it was trained with), the
translator's files (`saved_model.save_translator`) and `training.json`, the record of every epoch.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import keras

from transformer_lib.utils.checks import (
    require_growth,
    require_learning_rate,
    require_max_length,
    require_positive_int,
    require_rate,
    require_sampling_alpha,
    require_share,
)
from transformer_lib.data.corpora import load_parallel_corpus
from transformer_lib.data.batching import make_batches, train_tokenizers
from transformer_lib.decoding.translator import Translator
from transformer_lib.decoding.bleu import EVALUATION_BATCH
from transformer_lib.export.saved_model import save_translator
from transformer_lib.utils.json_records import write_json
from transformer_lib.utils.machine_description import describe_machine
from transformer_lib.utils.memory_budget import decoding_bytes, require_fits, training_bytes
from transformer_lib.config import PRESETS, TransformerConfig, require_preset
from transformer_lib.models.transformer import Transformer
from transformer_lib.training.objective import make_optimizer
from transformer_lib.training.run_folder import RECORD_FILE, finished_message, finished_record, prepare_run
from transformer_lib.training.run_lock import run_lock
from transformer_lib.training.selection import bleu_score, select_weights
from transformer_lib.data.splits import SCHEME
from transformer_lib.data.tokenizer import require_vocab_size
from transformer_lib.training.loop import train


@dataclasses.dataclass(frozen=True)
class Recipe:
    """Every setting of a training run, in one place: what `train_translator` and the CLI's `train`
    use, what a run saves (`settings.json`) and compares before it resumes, and what the benchmarks
    change one at a time (`Recipe().replace(warmup_steps=1000)`).

    Data: `corpus`, `vocab_size` pieces per language (`joint_vocab`: one shared vocabulary and
    embeddings, §3.4), sentences of at most `max_length` tokens. Batches (`make_batches`): about
    `batch_tokens` tokens of sentences of similar length (or `batch_size` sentences), buckets
    `bucket_growth` times wider each, the batches of an epoch shuffled (`shuffle_batches`);
    `bucketing=False` with `batch_size` is the TensorFlow tutorial's `padded_batch`; `sampling_alpha`
    segments the training sentences anew each time (BPE-dropout, `make_batches`). Model: the
    `preset`, its dropout or `dropout_rate`, dropout on the attention weights and the feed-forward's
    inner activations (`attention_dropout`, `activation_dropout`; not in the paper), `norm_first` for
    pre-LN (False: the paper's post-LN), `tie_output` for the target embedding as the output layer too.
    Optimizer (§5.3): warm-up for `warmup_steps` updates, or for `warmup_ratio` of the run when
    `warmup_steps` is None, up to the schedule's own peak or `peak_rate`. Objective: `label_smoothing`
    (§5.4). Run: `epochs`, `average_last` epochs' weights also tried (§6.1), `seed`.

    The defaults are chapter 7's recipe. Pre-LN, a warm-up of 1,000 updates and shuffled batches of
    ~1,024 tokens won the study of time to quality (`benchmarks/recipe_ablation.json`, chapter
    10 section 7). The corpus (Tatoeba + the SMARTool learner sentences), dropout 0.2 and label
    smoothing 0.2 come from the small-data study (`benchmarks/small_data_study*.json`, the
    performance appendix, section 9). 29 epochs fill the 40 minutes of training on a 2-core CPU with
    the compiled loss (36.3 minutes in chapter 7's run); of that run's last 5, 10 and 15 epochs, the
    average of the last 5 validated best (chapter 7). The `wide` preset (3 layers of width 256) learned
    far more in eight epochs, but over a whole run of 40 minutes it only drew level
    (`benchmarks/whole_runs.json`), so the recipe keeps `small`; so did the output layer tied to the target
    embedding (`tie_output`), which stays off.
    """

    corpus: str = "tatoeba+smartool/rus-eng"
    preset: str = "small"
    epochs: int = 29
    vocab_size: int = 8000
    joint_vocab: bool = False
    max_length: int = 64
    batch_tokens: int | None = 1024
    batch_size: int | None = None
    bucketing: bool = True
    bucket_growth: float = 1.1
    shuffle_batches: bool = True
    sampling_alpha: float | None = None
    warmup_steps: int | None = 1000
    warmup_ratio: float | None = None
    peak_rate: float | None = None
    dropout_rate: float | None = 0.2
    attention_dropout: float = 0.0
    activation_dropout: float = 0.0
    label_smoothing: float = 0.2
    norm_first: bool = True
    tie_output: bool = False
    average_last: int = 5
    seed: int = 0

    # what a run may change when it resumes: it may train longer and try other averages
    NOT_SHAPING = ("epochs", "average_last")
    # settings added after runs were recorded, and their value in a record made before they existed
    ADDED_LATER = {"tie_output": False}

    def __post_init__(self):
        require_preset(self.preset)
        for name in ("epochs", "average_last"):
            require_positive_int(name, getattr(self, name))
        require_vocab_size(self.vocab_size)
        if (self.batch_size is None) == (self.batch_tokens is None):
            raise ValueError("A recipe gives exactly one of batch_tokens (tokens per batch) or batch_size "
                             "(sentences per batch); set the other to None.")
        require_positive_int("batch_tokens" if self.batch_size is None else "batch_size",
                             self.batch_tokens or self.batch_size)
        if (self.warmup_steps is None) == (self.warmup_ratio is None):
            raise ValueError("A recipe warms up for warmup_steps updates or for warmup_ratio of the run: "
                             "give exactly one, the other None.")
        if self.warmup_steps is not None:
            require_positive_int("warmup_steps", self.warmup_steps)
        else:
            require_share("warmup_ratio", self.warmup_ratio)
        if self.peak_rate is not None:
            require_learning_rate("peak_rate", self.peak_rate)
        require_growth("bucket_growth", self.bucket_growth)
        for name in ("dropout_rate", "attention_dropout", "activation_dropout", "label_smoothing"):
            if getattr(self, name) is not None:
                require_rate(name, getattr(self, name))
        require_max_length(self.max_length)
        if self.sampling_alpha is not None:
            require_sampling_alpha(self.sampling_alpha)

    def replace(self, **changes) -> Recipe:
        """This recipe with some settings changed (checked again); an unknown name is refused."""
        unknown = sorted(set(changes) - {field.name for field in dataclasses.fields(self)})
        if unknown:
            raise TypeError(f"Recipe has no setting {', '.join(unknown)}; its settings: "
                            f"{', '.join(field.name for field in dataclasses.fields(self))}.")
        if changes.get("warmup_ratio") is not None and "warmup_steps" not in changes:
            changes["warmup_steps"] = None  # a share of the run replaces the fixed warm-up
        if changes.get("batch_size") is not None and "batch_tokens" not in changes:
            changes["batch_tokens"] = None  # sentences per batch replace tokens per batch
        return dataclasses.replace(self, **changes)

    def changes(self, base: Recipe | None = None) -> dict:
        """The settings in which this recipe differs from `base` (default: `Recipe()`)."""
        base = base or Recipe()
        return {name: value for name, value in self.to_dict().items() if getattr(base, name) != value}

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def batching(self) -> dict:
        """`make_batches`' options for this recipe (with `max_length`)."""
        return dict(batch_size=self.batch_size, batch_tokens=self.batch_tokens, max_length=self.max_length,
                    bucketing=self.bucketing, bucket_growth=self.bucket_growth, shuffle_batches=self.shuffle_batches)

    def warmup(self, updates: int) -> int:
        """The warm-up in updates, for a run of `updates` updates."""
        return self.warmup_steps or max(1, round(self.warmup_ratio * updates))

    def model_config(self, input_vocab_size: int, target_vocab_size: int, **sizes) -> TransformerConfig:
        """The `TransformerConfig` this recipe trains: its preset, with `sizes` changed, the recipe's
        dropouts (or the preset's), pre- or post-LN, shared embeddings or tied output, the vocabularies given."""
        dropout = {} if self.dropout_rate is None else {"dropout_rate": self.dropout_rate}
        return PRESETS[self.preset].replace(
            input_vocab_size=input_vocab_size, target_vocab_size=target_vocab_size, max_length=self.max_length,
            norm_first=self.norm_first, share_embeddings=self.joint_vocab, attention_dropout=self.attention_dropout,
            activation_dropout=self.activation_dropout, tie_output=self.tie_output, **dropout, **sizes)

    def model(self, tokenizers, **sizes) -> Transformer:
        """The recipe's `Transformer` for `tokenizers` (source, target): `model_config`'s."""
        return Transformer(self.model_config(tokenizers[0].vocab_size, tokenizers[1].vocab_size, **sizes))

    def optimizer(self, config: TransformerConfig | int, updates: int) -> keras.optimizers.Adam:
        """Adam with the §5.3 schedule this recipe asks for, for a run of `updates` updates of a model
        with `config` (its `d_model` sets the schedule's peak; a number is taken as d_model)."""
        d_model = config if isinstance(config, int) else config.d_model
        return make_optimizer(d_model, self.warmup(updates), self.peak_rate)


def train_translator(out: str | Path, recipe: Recipe | None = None, *, xla: bool = False, restart: bool = False,
                     verbose: int = 1, **changes) -> dict:
    """Train tokenizers and a `Transformer.from_preset(recipe.preset)` on `recipe.corpus`, and save the translator.

    The whole recipe of chapter 7 in one call: `recipe` (default `Recipe()`, chapter 7's recipe), with `changes` to it by name
    (`train_translator(out, epochs=30)`).
    Training uses the corpus's train split; its validation split is scored after every epoch (loss,
    and BLEU of greedy translations), and the saved translator is the last epoch's, the best
    epoch's or the average of the last `average_last` epochs' weights (§6.1), whichever gives the
    best beam-search BLEU on the validation split. Checkpoints go to `out/checkpoints` (a second
    call resumes there, and refuses if a setting that shapes the run differs, unless
    `restart=True` deletes the old run first), the translator to `out` (`load_translator(out)`),
    and a summary to `out/training.json`: the recipe, the machine, the training time, the history
    of every epoch and the choice of weights. `verbose`: 1 a progress bar, 2 one line per epoch
    (for a log file), 0 nothing. `xla` compiles the training step. For mixed precision, set the
    Keras policy to "mixed_float16" before calling. One run at a time in `out`: a second call
    while one works there is refused at once, naming the process that holds it (`run_lock`).
    """
    recipe = (recipe or Recipe()).replace(**changes)
    settings = {**{name: value for name, value in recipe.to_dict().items() if name not in Recipe.NOT_SHAPING},
                "splits": SCHEME, "precision": keras.mixed_precision.global_policy().name}
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"out={out} is a file; the translator needs a directory. Choose another path.")
    require_memory(recipe)
    with run_lock(out):  # one run at a time in `out`
        out = prepare_run(out, settings, restart, Recipe.ADDED_LATER)
        finished = finished_record(out, recipe.epochs)
        if finished is not None:  # nothing left to train: neither tokenizers nor model are made again
            if verbose:
                print(finished_message(out, finished["history"]["epoch"][-1], recipe.epochs))
            return finished
        keras.utils.set_random_seed(recipe.seed)
        val_pairs = load_parallel_corpus(recipe.corpus, "validation")
        tokenizers, train_ds, val_ds = training_data(recipe, val_pairs, verbose=bool(verbose))
        model = recipe.model(tokenizers)
        steps = int(train_ds.cardinality()) * recipe.epochs
        if verbose:
            print(f"{recipe.corpus}: preset {recipe.preset}; {steps:,} steps, warm-up {recipe.warmup(steps)}; "
                  f"{describe_machine()}")
        start = time.perf_counter()
        history = train(model, train_ds, val_ds, epochs=recipe.epochs,
                        optimizer=recipe.optimizer(model.config, steps),
                        label_smoothing=recipe.label_smoothing, checkpoint_dir=out / "checkpoints",
                        keep_weights=recipe.average_last, score=bleu_score(tokenizers, val_pairs, recipe.max_length),
                        jit_compile=xla, verbose=verbose)
        seconds = time.perf_counter() - start
        choice = select_weights(model, out / "checkpoints", bleu_score(tokenizers, val_pairs, recipe.max_length, beam_size=4),
                                recipe.average_last, verbose=bool(verbose))
        save_translator(Translator(model, *tokenizers, max_length=recipe.max_length), out)
        summary = {**settings, "epochs": recipe.epochs, "average_last": recipe.average_last, "warmup": recipe.warmup(steps),
                   "train_seconds": round(sum(history["seconds"]), 1), "train_seconds_this_run": round(seconds, 1),
                   "machine": describe_machine(), "history": history, "weights": choice}
        write_json(out / RECORD_FILE, summary, indent=2)
        if verbose:
            print(f"Saved the translator ({choice['chosen']}) to {out} after {seconds / 60:.1f} min of training.")
        return summary


def require_memory(recipe: Recipe) -> None:
    """Refuse, before any work, a `max_length` or a batch that this machine's memory cannot hold:
    a training step, or the beam search of the validation split that chooses the weights."""
    sizes = recipe.model_config(recipe.vocab_size, recipe.vocab_size)
    shortest_batch = recipe.batch_size or 1  # sentences: with batch_tokens a batch may be one long sentence
    require_fits("max_length", recipe.max_length,
                 lambda n: max(training_bytes(sizes, shortest_batch * n, n), decoding_bytes(sizes, EVALUATION_BATCH, 4, n, n)),
                 f" with preset {recipe.preset!r}")
    name, value, tokens = (("batch_tokens", recipe.batch_tokens, lambda t: t) if recipe.batch_tokens else
                           ("batch_size", recipe.batch_size, lambda b: b * recipe.max_length))
    require_fits(name, value, lambda v: training_bytes(sizes, tokens(v), recipe.max_length),
                 f" with preset {recipe.preset!r} and max_length={recipe.max_length}")


def training_data(recipe: Recipe, val_pairs, verbose: bool = True):
    """Tokenizers trained on the recipe's corpus's train split, its training batches and the
    validation batches (in a fixed order), as the recipe batches them."""
    train_pairs = load_parallel_corpus(recipe.corpus, "train")
    tokenizers = train_tokenizers(train_pairs, recipe.vocab_size, joint=recipe.joint_vocab)
    batching = dict(recipe.batching(), verbose=verbose)
    return (tokenizers, make_batches(train_pairs, tokenizers, seed=recipe.seed, sampling_alpha=recipe.sampling_alpha, **batching),
            make_batches(val_pairs, tokenizers, shuffle=False, **batching))
