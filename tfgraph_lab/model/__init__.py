"""The plain data every layer shares: the report's words (:mod:`.vocab`), the records of calls,
traces and functions (:mod:`.records`), signatures as text, the counts and their selections, the
places in the user's code, and the project's errors. Imports nothing of the project above it, and
neither TensorFlow, IPython nor ipywidgets."""
