"""Developer tools run from a checkout, above the CLI in the layers: the benchmark
(``python -m tools.bench``, `make bench`) and the generated docs (``python -m tools.docs_gen``,
`make docs`); spark_connect.py starts a local Spark Connect server (`make connect-server`)."""
