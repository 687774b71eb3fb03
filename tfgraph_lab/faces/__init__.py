"""The front ends over one watch: the ``%%tracewatch`` magic, the ``tfgraph-lab`` command line,
the monitor, the demo, and the live view a notebook shows while a cell runs. Thin glue: they
parse what the user asked, run a watch and render its report."""
