"""The user's tests: one budget per marker, and the tracewatch fixture."""

import pytest
from sample_training import train, train_step


@pytest.mark.max_traces(train_step=1)
def test_train_traces_once():
    assert train(3) == 12.0


@pytest.mark.max_traces(2)
def test_two_steps_within_two_traces():
    assert train(2) == 4.0


def test_fixture_sees_every_call(tracewatch):
    train(2)
    assert tracewatch.report.function("train_step").calls == 2
    assert tracewatch.report.function("train_step").traces <= 2
    assert train_step.experimental_get_tracing_count() >= 1
