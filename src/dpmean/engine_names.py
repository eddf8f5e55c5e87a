"""The engine names ``engine=`` (and the CLI's ``--engine``) accept, in a module that imports
nothing: the command line builds its parser from them without loading numpy or the engines."""

ENGINES = ("memory", "chunked", "sparse", "dask")
"""Engine names; None (the default) picks one by the input's type."""
