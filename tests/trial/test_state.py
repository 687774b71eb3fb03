"""What a fix trial says it puts back (issue 32.5): it said "(Keras optimizers' iterations
included)" of every set of tf.Variables, also where no optimizer was in reach."""

from __future__ import annotations

import keras
import tensorflow as tf

from tfgraph_lab.trial.state import UserState


def test_optimizers_are_named_only_when_one_is_kept() -> None:
    v = tf.Variable(1.0)
    plain = UserState({"v": v})
    assert "the values of 1 tf.Variable" in plain.restored()
    assert "optimizer" not in plain.restored()
    opt = keras.optimizers.SGD(0.1)
    opt.apply_gradients([(tf.constant(1.0), v)])
    with_optimizer = UserState({"v": v, "opt": opt})
    assert "(Keras optimizers' iterations included)" in with_optimizer.restored()
    opt.apply_gradients([(tf.constant(1.0), v)])
    with_optimizer.restore()
    assert int(opt.iterations.numpy()) == 1 and abs(float(v.numpy()) - 0.9) < 1e-6
