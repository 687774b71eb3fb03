"""The recording side: the hub that patches TensorFlow through the adapter, the hooks it
installs, the shared call log, the aggregation of that log into records, and the readers of
TensorFlow's own output (its retracing warning, its XLA compile log). Imports neither IPython
nor ipywidgets, and TensorFlow only through :mod:`tfgraph_lab.adapter`."""
