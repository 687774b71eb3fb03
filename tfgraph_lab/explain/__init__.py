"""Pure reasoning over plain records: why a trace happened (:mod:`.trace`, :mod:`.arguments`),
why a trace failed, what XLA compiled, and the fixes and suggestions written from them.
No TensorFlow, no IPython, no recording: every function here takes records and returns records
or text, so it can be tested without TensorFlow."""
