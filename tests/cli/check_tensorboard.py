"""Reads kiln's TensorBoard logs with the tensorboard package's EventAccumulator and checks them
against kiln's history CSV: the tags Keras' TensorBoard callback writes, one scalar per epoch
(step = epoch - 1) equal to the CSV's loss / accuracy / lr / val_loss / val_accuracy, and the
batch_* scalars every N steps.  usage: check_tensorboard.py LOGDIR HISTORY.csv EVERY STEPS_PER_EPOCH"""
import csv
import sys

from tensorboard.backend.event_processing import event_accumulator as ea

logdir, history, every, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rows = list(csv.DictReader(open(history)))
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def scalars(run):
    acc = ea.EventAccumulator(f"{logdir}/{run}", size_guidance={ea.SCALARS: 0})
    acc.Reload()
    return acc, {tag: acc.Scalars(tag) for tag in acc.Tags()["scalars"]}


def close(a, b):
    return abs(a - b) <= 2e-6 * max(1.0, abs(b))    # float32 events vs the CSV's 6 decimals


train_acc, train = scalars("train")
val_acc, val = scalars("validation")
want_train = {"epoch_loss", "epoch_accuracy", "epoch_learning_rate", "batch_loss", "batch_accuracy", "batch_learning_rate"}
check(set(train) == want_train, f"train tags {sorted(train)}, want {sorted(want_train)}")
check(set(val) == {"epoch_loss", "epoch_accuracy"}, f"validation tags {sorted(val)}")
check(train_acc.file_version == 2.0, f"file_version {train_acc.file_version!r} (brain.Event:2 reads as 2.0)")
for tag, column, run in [("epoch_loss", "loss", train), ("epoch_accuracy", "accuracy", train),
                         ("epoch_learning_rate", "lr", train), ("epoch_loss", "val_loss", val),
                         ("epoch_accuracy", "val_accuracy", val)]:
    events = run.get(tag, [])
    check([e.step for e in events] == [int(r["epoch"]) - 1 for r in rows], f"{tag} steps {[e.step for e in events]}")
    for e, r in zip(events, rows):
        check(close(e.value, float(r[column])), f"{tag} at step {e.step}: {e.value} vs {column} {r[column]}")
batch = [e.step for e in train.get("batch_loss", [])]
total = steps * len(rows)
check(batch == list(range(every, total + 1, every)), f"batch_loss steps {batch} (every {every} of {total})")
check(all(0 < e.value < 10 for e in train.get("batch_loss", [])), "batch_loss values")
# the last batch of an epoch logs the epoch's running mean: the epoch value
for r in rows:
    end = int(r["epoch"]) * steps
    hit = [e for e in train.get("batch_loss", []) if e.step == end]
    if hit:
        check(close(hit[0].value, float(r["loss"])), f"batch_loss at the end of epoch {r['epoch']}: {hit[0].value} vs {r['loss']}")
if failures:
    print("\n".join("FAIL: " + f for f in failures))
    sys.exit(1)
print(f"check_tensorboard: {len(rows)} epochs, {len(batch)} batch points, tags {sorted(train)} / {sorted(val)}: all equal the history")
