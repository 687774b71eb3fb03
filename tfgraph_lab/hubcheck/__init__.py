"""Checking a JupyterHub for a workshop: N simulated learners at once, measured.

``tfgraph-lab workshop check --hub URL --token TOKEN --learners N`` (:mod:`.command`) runs the
load test (:mod:`.load`) of simulated learners (:mod:`.learner`), who drive the hub's and their
servers' REST APIs (:mod:`.rest`) and kernel websockets (:mod:`.kernel`); the results become a
table, z2jh sizing and a verdict (:mod:`.table`). :mod:`.localhub` starts a real JupyterHub on
loopback for the tests and ``benchmarks/hub_load.py``; :mod:`.sampler` reads its processes with
psutil. Nothing here imports TensorFlow, IPython or ipywidgets: the kernels on the hub do.
"""

from __future__ import annotations
