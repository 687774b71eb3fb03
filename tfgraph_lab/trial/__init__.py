"""Trying a fix: run the user's code again with the best fix of the report applied, under a
watch, and compare the two runs (:mod:`.tryfix`). The figures it gathers are plain data in
:mod:`tfgraph_lab.report.fix_trial`. It rebuilds the user's ``tf.function`` with new keywords
through the adapter's :mod:`~tfgraph_lab.adapter.rewrap` and records nothing itself: the
recorder does."""
