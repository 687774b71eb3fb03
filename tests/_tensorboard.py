"""TensorBoard scalars read back from the event files with TensorFlow's own reader (the
tensorboard package is not needed); shared by the tests that write them."""

from __future__ import annotations

from pathlib import Path


def read_scalars(log_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """Each tag's (step, value) points, in the order written."""
    import tensorflow as tf

    out: dict[str, list[tuple[int, float]]] = {}
    for path in sorted(log_dir.glob("events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            for value in event.summary.value:
                assert value.metadata.plugin_data.plugin_name == "scalars"
                number = float(tf.make_ndarray(value.tensor))
                out.setdefault(value.tag, []).append((event.step, number))
    return out
