"""One watch, from start to report: the recorder (:func:`watch`, :class:`TraceRecorder`), its
lifecycle, the options that say what to record and write, the budgets, the outputs (JSON,
timeline, TensorBoard), the live log, and trying a fix by watching a re-run. Reaches
TensorFlow only through the recording side; imports no IPython or ipywidgets."""
