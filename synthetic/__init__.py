"""Synthetic landing data (issue 27: out of the CLI package): the deterministic demo
(``synthetic.demo``, `thinktax demo` / `make run`) and the benchmark's gateway telemetry
(``synthetic.benchgen``, `make bench`). Pure generators: numpy and polars, no thinktax module, so
they sit at the bottom of the layers (pyproject.toml)."""
