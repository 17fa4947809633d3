"""What the pipeline and the command line both use, below them both: the settings (thinktax.toml),
the break-even alert, the HTML report, the Prometheus scraper and the billing API clients.

Layers, arrows pointing down only (checked by the import-linter contract in pyproject.toml,
run by tests/test_layers.py):

    thinktax (the CLI: commands, console, runner, bench)
    pipelines (the Dagster code location)
    services
    warehouse (DuckDB: ingest, SQL tables, checks)
    sources (parsers of landed files) | models (pure inference economics)
"""
