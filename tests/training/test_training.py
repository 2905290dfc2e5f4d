import json
import shutil
import math
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

import transformer_lib as tl
from transformer_lib.training import selection
from transformer_lib.training.objective import MaskedLoss, TransformerSchedule, make_optimizer, masked_accuracy, masked_loss
from transformer_lib.training.loop import train


def paper_rate(step_num: int, d_model: int = 512, warmup: int = 4000) -> float:
    """§5.3, Eq. 3, for the paper's 1-based step_num."""
    return d_model**-0.5 * min(step_num**-0.5, step_num * warmup**-1.5)


@pytest.mark.parametrize("step_num", [1, 4000, 40000])
def test_schedule_follows_the_papers_formula(step_num):
    schedule = TransformerSchedule(d_model=512, warmup_steps=4000)
    # Keras passes the number of updates already done, so update number n sees schedule(n - 1).
    assert float(schedule(step_num - 1)) == pytest.approx(paper_rate(step_num), rel=1e-6)


def test_schedule_peaks_at_the_end_of_warm_up_and_round_trips():
    schedule = TransformerSchedule(128, warmup_steps=100)
    rates = [float(schedule(n - 1)) for n in (50, 99, 100, 101, 400)]
    assert rates[0] < rates[1] < rates[2] > rates[3] > rates[4]
    assert rates[2] == pytest.approx((128 * 100) ** -0.5, rel=1e-6)
    clone = TransformerSchedule.from_config(schedule.get_config())
    assert float(clone(99)) == rates[2]
    optimizer = make_optimizer(128, 100)
    assert (optimizer.beta_1, optimizer.beta_2, optimizer.epsilon) == (0.9, 0.98, 1e-9)


def test_label_smoothing_matches_a_hand_computation_on_three_tokens():
    logits = [2.0, 0.5, -1.0]
    log_z = math.log(sum(math.exp(x) for x in logits))
    log_p = [x - log_z for x in logits]
    label, eps = 1, 0.1
    # Smoothed target: 1 - eps + eps/3 on the label, eps/3 on each other token.
    expected = -sum(((1 - eps) * (v == label) + eps / 3) * log_p[v] for v in range(3))
    got = float(masked_loss(np.array([[label]]), np.array([[logits]], "float32"), label_smoothing=eps))
    assert got == pytest.approx(expected, rel=1e-6)


def test_unpadded_loss_equals_keras_label_smoothed_cross_entropy(rng):
    labels = rng.integers(1, 7, size=(3, 5))
    logits = rng.normal(size=(3, 5, 7)).astype("float32")
    keras_loss = keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1)
    expected = float(keras_loss(keras.ops.one_hot(labels, 7), logits))
    assert float(masked_loss(labels, logits)) == pytest.approx(expected, rel=1e-5)


def test_loss_and_accuracy_ignore_padding_columns(rng):
    labels = rng.integers(1, 7, size=(2, 4))
    logits = rng.normal(size=(2, 4, 7)).astype("float32")
    padded_labels = np.concatenate([labels, np.zeros((2, 3), int)], axis=1)
    padded_logits = np.concatenate([logits, rng.normal(size=(2, 3, 7)).astype("float32") * 50], axis=1)
    assert float(masked_loss(padded_labels, padded_logits)) == pytest.approx(float(masked_loss(labels, logits)), rel=1e-6)
    assert float(masked_accuracy(padded_labels, padded_logits)) == float(masked_accuracy(labels, logits))
    assert float(masked_accuracy(labels, np.eye(7)[labels] * 5.0)) == 1.0


def test_masked_loss_called_eagerly_equals_masked_loss(rng):
    """Keras's Loss.__call__ hands the labels over as floats; the ids must still be read as ids."""
    labels = np.array([[5, 6, 2, 0], [7, 2, 0, 0]])
    logits = rng.normal(size=(2, 4, 10)).astype("float32")
    assert float(MaskedLoss(label_smoothing=0.2)(labels, logits)) == pytest.approx(
        float(masked_loss(labels, logits, 0.2)), rel=1e-6)


def smoothed_loss_and_gradient_float64(labels, logits, eps, tokens=None):
    """The §5.4 loss over the real tokens and its gradient with respect to the logits, in float64 NumPy."""
    logits = logits.astype(np.float64)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    target = (1 - eps) * np.eye(logits.shape[-1])[labels] + eps / logits.shape[-1]
    real = (labels != 0).astype(np.float64)
    count = real.sum() if tokens is None else tokens
    loss = (-(target * log_probs).sum(axis=-1) * real).sum() / count
    return loss, (np.exp(log_probs) - target) * real[..., None] / count


@pytest.mark.parametrize("tokens", [None, 9.0])
def test_the_xla_compiled_loss_of_train_step_equals_a_float64_reference(rng, tokens):
    """`train_step` uses `masked_loss` compiled by XLA: the same value and gradient as the formula."""
    from transformer_lib.training.loop import compiled_loss
    labels = np.array([[5, 6, 2, 0, 0], [7, 2, 9, 4, 1]])
    logits = rng.normal(size=(2, 5, 10)).astype("float32") * 3
    expected_loss, expected_gradient = smoothed_loss_and_gradient_float64(labels, logits, 0.2, tokens)
    logits = tf.constant(logits)
    with tf.GradientTape() as tape:
        tape.watch(logits)
        loss = compiled_loss(tf.constant(labels), logits, 0.2, None if tokens is None else tf.constant(tokens))
    assert float(loss) == pytest.approx(expected_loss, rel=1e-5)
    np.testing.assert_allclose(tape.gradient(loss, logits).numpy(), expected_gradient, atol=1e-6)


def test_an_eager_train_step_refuses_a_label_outside_the_vocabulary(rng):
    """Inside XLA an id is never checked; an eager call (the chapter's exercises) checks it before."""
    model = tl.Transformer(1, 16, 2, 32, 12, 10)
    source, target_in = np.array([[1, 5, 2]]), np.array([[1, 4, 3]])
    with pytest.raises(ValueError, match=r"labels include 10, outside this vocabulary of 10 ids"):
        tl.train_step(model, keras.optimizers.Adam(), ((source, target_in), np.array([[4, 10, 2]])))
    from transformer_lib.training.loop import compiled_loss
    with pytest.raises(ValueError, match=r"labels include -1"):
        compiled_loss(np.array([[4, -1]]), tf.constant(rng.normal(size=(1, 2, 10)).astype("float32")))


def test_masked_loss_serializes_for_compile():
    loss = MaskedLoss(label_smoothing=0.2)
    assert keras.losses.deserialize(keras.losses.serialize(loss)).label_smoothing == 0.2
    with pytest.raises(ValueError, match="label_smoothing must be a number in"):
        MaskedLoss(label_smoothing=1.0)


@pytest.fixture(scope="module")
def synthetic_tokenizers():
    return tl.train_tokenizers(tl.load_parallel_corpus("synthetic", "train"), vocab_size=400)


def synthetic_dataset(tokenizers):
    """A new dataset object each time, as a new process would build it (a dataset's shuffle order
    advances every time it is iterated)."""
    pairs = tl.load_parallel_corpus("synthetic", "validation")
    return tl.make_batches(pairs, tokenizers, batch_tokens=512, max_length=24, seed=1, verbose=False)


@pytest.fixture
def synthetic_batches(synthetic_tokenizers):
    return synthetic_tokenizers, synthetic_dataset(synthetic_tokenizers)


def small_model(tokenizers, dropout_rate=0.1):
    return tl.Transformer(1, 32, 4, 64, tokenizers[0].vocab_size, tokenizers[1].vocab_size, dropout_rate=dropout_rate)


RESUMED_TRAINING = """
import json, sys
import keras, numpy as np, tensorflow as tf
tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})  # as conftest.py sets it
import transformer_lib as tl
from transformer_lib.training.loop import train
from transformer_lib.training.objective import make_optimizer

keras.utils.set_random_seed(1234)
tokenizers = tl.train_tokenizers(tl.load_parallel_corpus("synthetic", "train"), vocab_size=400)
def data():  # a new dataset object each time, as a new process would build it
    return tl.make_batches(tl.load_parallel_corpus("synthetic", "validation"), tokenizers, batch_tokens=512,
                           max_length=24, seed=1, verbose=False)
def model():
    return tl.Transformer(1, 32, 4, 64, tokenizers[0].vocab_size, tokenizers[1].vocab_size, dropout_rate=0.1)

keras.utils.set_random_seed(7)
straight = model()
straight_history = train(straight, data(), epochs=2, optimizer=make_optimizer(32, 50), verbose=0)
keras.utils.set_random_seed(7)
first = model()
first_history = train(first, data(), epochs=1, optimizer=make_optimizer(32, 50), checkpoint_dir=sys.argv[1], verbose=0)
keras.utils.set_random_seed(99)
resumed = model()
history = train(resumed, data(), epochs=2, optimizer=make_optimizer(32, 50), checkpoint_dir=sys.argv[1], verbose=0)
print(json.dumps({"epochs": history["epoch"], "straight_loss": straight_history["loss"],
                  "first_loss": first_history["loss"], "resumed_loss": history["loss"],
                  "differences": [float(np.abs(a - b).max()) for a, b in zip(straight.get_weights(), resumed.get_weights())]}))
"""


def test_resumed_training_ends_with_the_same_weights(tmp_path):
    """2 epochs in one go == 1 epoch, then a fresh start (new model, optimizer and dataset, other
    random weights) resuming from the checkpoint for the 2nd epoch. Dropout is on, so its random
    state must resume too; the data iterator's position and shuffle state come from the checkpoint.

    In a fresh interpreter: exact in practice on CPU (ten runs in one process, and after each other test file in
    turn, gave identical weights), yet it once failed inside the test suite's worker, after other tests had run
    there, its weights apart by up to 0.08. A process of its own keeps what other tests leave behind out of it."""
    result = subprocess.run([sys.executable, "-c", RESUMED_TRAINING, str(tmp_path)], capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["epochs"] == [1, 2]  # the first run's epoch comes back from checkpoint_dir/history.json
    # the first epoch of both runs is the same training: if this fails, training itself was not repeatable here
    assert report["first_loss"] == report["straight_loss"][:1], report
    assert report["resumed_loss"][0] == report["straight_loss"][0]  # restored from the first run's record
    assert max(report["differences"]) <= 1e-6, report  # exact in practice on CPU; 1e-6 allows for rounding


def test_the_order_of_the_batches_does_not_depend_on_whether_the_model_was_built(synthetic_tokenizers):
    """A shuffled dataset draws a new order each time it is read, and `train` reads one batch to build the model:
    it reads it whether or not the model is built, so a chapter that builds its model first (to count its
    weights) trains on the same batches, in the same order, as `train_translator`, which does not."""
    tokenizers = synthetic_tokenizers
    unshuffled = tl.make_batches(tl.load_parallel_corpus("synthetic", "validation"), tokenizers, shuffle=False,
                                 batch_tokens=512, max_length=24, verbose=False)
    losses = {}
    for built in (False, True):
        keras.utils.set_random_seed(7)
        model = small_model(tokenizers)
        if built:
            (source, target_in), _ = next(iter(unshuffled))
            model((source, target_in))
        history = train(model, synthetic_dataset(tokenizers), epochs=2, optimizer=make_optimizer(32, 50), verbose=0)
        losses[built] = history["loss"]
    np.testing.assert_allclose(losses[True], losses[False], rtol=0, atol=1e-6)


def test_training_reduces_the_loss_and_reports_history(synthetic_batches):
    tokenizers, dataset = synthetic_batches
    model = small_model(tokenizers)
    history = train(model, dataset, dataset, epochs=3, optimizer=make_optimizer(32, 30), verbose=0)
    assert set(history) == {"epoch", "loss", "accuracy", "seconds", "val_loss", "val_accuracy"}
    assert history["loss"][-1] < history["loss"][0] and history["val_loss"][-1] < history["val_loss"][0]


def test_mixed_precision_and_xla_paths_train(synthetic_batches):
    tokenizers, dataset = synthetic_batches
    few = dataset.take(1).apply(tf.data.experimental.assert_cardinality(1))  # one shape: XLA compiles once
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        model = small_model(tokenizers)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    history = train(model, few, epochs=1, jit_compile=True, verbose=0)
    assert np.isfinite(history["loss"][0])


def test_an_optimizer_from_another_strategy_is_refused(synthetic_batches):
    tokenizers, dataset = synthetic_batches
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    with strategy.scope():
        model = small_model(tokenizers)
    with pytest.raises(ValueError, match="Create the optimizer inside `with strategy.scope"):
        train(model, dataset, epochs=1, optimizer=make_optimizer(32, 30), strategy=strategy, verbose=0)


def test_training_under_a_mirrored_strategy_of_one_device_checkpoints_and_resumes(synthetic_batches, tmp_path):
    """Its data iterator cannot be saved (a distributed iterator), so the checkpoint goes without it."""
    tokenizers, dataset = synthetic_batches
    few = dataset.take(2).apply(tf.data.experimental.assert_cardinality(2))
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with strategy.scope():
        model, optimizer = small_model(tokenizers), make_optimizer(32, 30)
    train(model, few, epochs=1, optimizer=optimizer, strategy=strategy, checkpoint_dir=tmp_path, verbose=0)
    with strategy.scope():
        model, optimizer = small_model(tokenizers), make_optimizer(32, 30)
    history = train(model, few, epochs=2, optimizer=optimizer, strategy=strategy, checkpoint_dir=tmp_path, verbose=0)
    assert history["epoch"] == [1, 2]


def test_datasets_of_unknown_length_are_refused(synthetic_batches):
    tokenizers, dataset = synthetic_batches
    unknown = dataset.filter(lambda inputs, target: True)
    with pytest.raises(ValueError, match="known, finite number of batches"):
        train(small_model(tokenizers), unknown, epochs=1, verbose=0)


def test_training_under_mirrored_strategy_on_two_cpu_devices():
    """Logical devices must be set before TensorFlow starts, hence a fresh interpreter."""
    script = textwrap.dedent(
        """
        import json, tensorflow as tf
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        import keras, transformer_lib as tl
        from transformer_lib.training.objective import make_optimizer
        from transformer_lib.training.loop import train
        keras.utils.set_random_seed(0)
        tokenizers = tl.train_tokenizers(tl.load_parallel_corpus("synthetic", "train"), vocab_size=400)
        data = tl.make_batches(tl.load_parallel_corpus("synthetic", "validation"), tokenizers,
                               batch_size=16, max_length=24, verbose=False).take(8)  # 8 of its 34 batches
        strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
        with strategy.scope():
            model = tl.Transformer(1, 32, 4, 64, tokenizers[0].vocab_size, tokenizers[1].vocab_size)
            optimizer = make_optimizer(32, 30)
        history = train(model, data, epochs=3, optimizer=optimizer, strategy=strategy, verbose=0)
        print(json.dumps({"replicas": strategy.num_replicas_in_sync, "loss": history["loss"]}))
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["replicas"] == 2
    assert report["loss"][-1] < report["loss"][0]


# --- Keep the best epoch, average the last ones (selection.py) ---


def test_training_keeps_the_last_epochs_weights_and_the_best_by_its_score(synthetic_batches, tmp_path):
    tokenizers, dataset = synthetic_batches
    scores = iter([3.0, 9.0, 5.0, 4.0])  # epoch 2 is the best
    model = small_model(tokenizers)
    history = train(model, dataset, dataset, epochs=4, optimizer=make_optimizer(32, 30), checkpoint_dir=tmp_path,
                    keep_weights=2, score=lambda m: next(scores), verbose=0)
    assert history["val_score"] == [3.0, 9.0, 5.0, 4.0]
    assert selection.kept_epochs(tmp_path) == [3, 4]  # the last two; older ones deleted
    best = small_model(tokenizers)
    best((np.ones((1, 3), "int32"), np.ones((1, 3), "int32")))
    best.load_weights(tmp_path / "weights" / "best.weights.h5")
    for epoch in (3, 4):
        other = small_model(tokenizers)
        other((np.ones((1, 3), "int32"), np.ones((1, 3), "int32")))
        other.load_weights(selection.epoch_file(tmp_path, epoch))
        assert any(not np.array_equal(a, b) for a, b in zip(best.get_weights(), other.get_weights()))
    assert json.loads((tmp_path / "history.json").read_text())["val_score"] == history["val_score"]


@pytest.mark.parametrize("history, expected", [
    ({"epoch": [1, 2, 3], "val_loss": [2.0, 1.5, 1.7]}, 2),
    ({"epoch": [1, 2, 3], "val_loss": [2.0, 1.5, 1.7], "val_score": [10.0, 11.0, 12.5]}, 3),  # the score wins
    ({"epoch": [4, 5], "val_loss": [1.0, 0.9]}, 5),
])
def test_best_epoch_is_the_highest_score_or_else_the_lowest_loss(history, expected):
    assert selection.best_epoch(history) == expected


def test_best_epoch_needs_validation_results():
    with pytest.raises(ValueError, match="give train a val_ds"):
        selection.best_epoch({"epoch": [1], "loss": [2.0]})


def constant_weights_files(tokenizers, directory, values):
    """Weights files of a small model whose every trainable weight is filled with `values[i]`."""
    model = small_model(tokenizers)
    model((np.ones((1, 3), "int32"), np.ones((1, 3), "int32")))
    paths = []
    for epoch, value in enumerate(values, start=1):
        for weight in model.trainable_weights:
            weight.assign(np.full(weight.shape, value, "float32"))
        paths.append(selection.epoch_file(directory, epoch))
        paths[-1].parent.mkdir(parents=True, exist_ok=True)
        model.save_weights(paths[-1])
    return model, paths


def test_averaged_weights_are_the_float64_mean_of_the_files(synthetic_tokenizers, tmp_path):
    model, paths = constant_weights_files(synthetic_tokenizers, tmp_path, [0.1, 0.2, 0.6])
    rng = np.random.default_rng(0)
    model.load_weights(paths[0])
    for weight in model.trainable_weights:  # random values, so a mean of wrong pairs cannot pass
        weight.assign(rng.normal(size=weight.shape).astype("float32"))
    model.save_weights(paths[0])
    expected = [(np.asarray(w, np.float64) + 0.2 + 0.6) / 3 for w in model.get_weights()[: len(model.trainable_weights)]]
    selection.average_weights(model, paths)
    for weight, mean in zip(model.trainable_weights, expected):
        np.testing.assert_allclose(weight.numpy(), mean, rtol=1e-6, atol=1e-7)


def test_select_weights_keeps_the_candidate_that_scores_best(synthetic_tokenizers, tmp_path):
    model, paths = constant_weights_files(synthetic_tokenizers, tmp_path, [1.0, 2.0, 3.0, 4.0])
    shutil.copy(paths[0], tmp_path / "weights" / "best.weights.h5")  # epoch 1 was the best
    target = {"last": 4.0, "best": 1.0, "average": 3.0}  # the average of epochs 2-4 is 3.0

    for wanted, value in target.items():
        choice = selection.select_weights(model, tmp_path, lambda m: -abs(float(m.trainable_weights[0][0, 0]) - value),
                                          average_last=3, verbose=False)
        assert choice["chosen"].startswith(wanted), choice
        assert float(model.trainable_weights[0][0, 0]) == pytest.approx(value)
    assert set(choice["scores"]) == {"last (epoch 4)", "best", "average of epochs 2-4"}


def test_bleu_score_translates_each_set_of_weights_once(synthetic_tokenizers, monkeypatch):
    import transformer_lib.decoding.bleu as bleu_module

    evaluated, evaluate_bleu = [], bleu_module.evaluate_bleu
    monkeypatch.setattr(bleu_module, "evaluate_bleu", lambda *a, **k: evaluated.append(1) or evaluate_bleu(*a, **k))
    pairs = tl.load_parallel_corpus("synthetic", "test")[:6]
    score = selection.bleu_score(synthetic_tokenizers, pairs, max_length=24)
    model = small_model(synthetic_tokenizers)
    model((np.ones((1, 3), "int32"), np.ones((1, 3), "int32")))
    first = score.evaluate(model)
    assert score(model) == first["bleu"] and len(evaluated) == 1  # the same weights: remembered
    assert len(first["translations"]) == len(pairs) and first["streams"]
    saved = model.get_weights()
    model.trainable_weights[0].assign(model.trainable_weights[0] + 1.0)  # other weights: translated again
    score(model)
    model.set_weights(saved)
    assert score.evaluate(model) is first and len(evaluated) == 2


def test_kept_epochs_are_in_numeric_order_past_epoch_999(tmp_path):
    for epoch in (1000, 998, 999):
        path = selection.epoch_file(tmp_path, epoch)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    assert selection.kept_epochs(tmp_path) == [998, 999, 1000]


def test_a_negative_number_of_kept_epochs_is_refused(synthetic_batches, tmp_path):
    tokenizers, dataset = synthetic_batches
    with pytest.raises(ValueError, match="keep_weights must be a positive integer, got -1"):
        train(small_model(tokenizers), dataset, dataset, epochs=1, keep_weights=-1, checkpoint_dir=tmp_path, verbose=0)
    with pytest.raises(ValueError, match="average_last must be a positive integer, got 0"):
        selection.select_weights(small_model(tokenizers), tmp_path, lambda model: 1.0, average_last=0)


def test_resuming_with_validation_a_run_trained_without_it_is_refused(synthetic_batches, tmp_path):
    """Its history has no val_loss for the epochs done: the epochs and their scores would not line up."""
    tokenizers, dataset = synthetic_batches
    train(small_model(tokenizers), dataset, epochs=1, optimizer=make_optimizer(32, 50), checkpoint_dir=tmp_path,
          verbose=0)
    with pytest.raises(ValueError, match="recorded no val_loss, val_accuracy for its first 1 epoch.*trained without"):
        train(small_model(tokenizers), dataset, dataset, epochs=2, optimizer=make_optimizer(32, 50),
              checkpoint_dir=tmp_path, verbose=0)


def test_a_resumed_log_begins_with_the_epochs_done_before(synthetic_batches, tmp_path, capsys):
    """verbose=2 on a resumed run prints the earlier epochs' lines from the history, marked as such."""
    from transformer_lib.training.loop import epoch_line

    tokenizers, dataset = synthetic_batches
    first = train(small_model(tokenizers), dataset, dataset, epochs=1, optimizer=make_optimizer(32, 50),
                  checkpoint_dir=tmp_path, verbose=2)
    before = capsys.readouterr().out
    history = train(small_model(tokenizers), dataset, dataset, epochs=2, optimizer=make_optimizer(32, 50),
                    checkpoint_dir=tmp_path, verbose=2)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Resumed from ckpt-1: 1 epoch(s) done."
    # the line the first call printed, with the total of this call and the mark
    assert lines[1] == before.strip().splitlines()[-1].replace("Epoch 1/1", "Epoch 1/2") + "  (before this call)"
    assert lines[2].startswith("Epoch 2/2: ") and "before" not in lines[2]
    assert history["loss"][0] == first["loss"][0]
    steps = int(dataset.cardinality())
    assert lines[1] == epoch_line(1, 2, steps, {k: v[0] for k, v in first.items() if k != "epoch"}) + "  (before this call)"


@pytest.mark.parametrize("options", [dict(keep_weights=2), dict(score=lambda model: 1.0),
                                     dict(keep_weights=2, with_val=True)])
def test_keeping_or_scoring_epochs_without_what_they_need_is_refused(synthetic_batches, options):
    tokenizers, dataset = synthetic_batches
    val_ds = dataset if options.pop("with_val", False) else None  # the last case lacks checkpoint_dir
    with pytest.raises(ValueError, match="keep_weights and score judge epochs on val_ds"):
        train(small_model(tokenizers), dataset, val_ds, epochs=1, verbose=0, **options)
