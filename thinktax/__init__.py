"""thinktax: cost analytics for reasoning-model inference.

This package is the command line (``thinktax.cli``, ``thinktax.commands``, the console and the
runner that starts the Dagster job). What the pipeline itself uses lives below it (see
services/__init__.py for the layers). The modules that used to live here keep their old names as
plain deprecated modules (``thinktax/config.py`` etc.) that hand out the module where it lives
now -- the same module object, so a monkeypatch through either name patches both -- with a
DeprecationWarning; import-linter and a reader see them as the imports they are (issue 27: the
import-alias finder that did this invisibly is gone).
"""
