"""TensorBoard event files written with TensorFlow alone (``tf.summary.write``; no tensorboard
package): the one place that touches TensorFlow for :mod:`tfgraph_lab.watching.tensorboard`."""

from __future__ import annotations

from typing import Any

__all__ = ["ScalarWriter"]


class ScalarWriter:
    """A ``tf.summary`` file writer for one log directory, made when this is made."""

    def __init__(self, log_dir: str) -> None:
        import tensorflow as tf

        self._writer = tf.summary.create_file_writer(log_dir)

    def write(self, values: dict[str, float], step: int) -> None:
        """One scalar point per tag at ``step``, flushed."""
        import tensorflow as tf

        # init_scope: a step may end while a tf.function traces (never in Keras's callbacks, but
        # a summary op must never land in the user's graph).
        with tf.init_scope(), self._writer.as_default():
            for tag, value in values.items():
                tf.summary.write(
                    tag, tf.constant(float(value), tf.float32), step=step, metadata=_scalar_metadata()
                )
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()


def _scalar_metadata() -> Any:
    """What TensorBoard's scalar plugin writes, built with TensorFlow alone.

    ``tf.summary.scalar`` needs the tensorboard package (TF 2.21 raises TBNotInstalledError
    without it); ``tf.summary.write`` with this metadata makes the same event: plugin "scalars",
    ``ScalarPluginData(version=0)`` (which serialises to no bytes), data class scalar.
    """
    from tensorflow.core.framework import summary_pb2

    return summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars", content=b""),
        data_class=summary_pb2.DATA_CLASS_SCALAR,
    )
