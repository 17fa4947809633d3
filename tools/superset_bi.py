"""Provision and serve Apache Superset over the published warehouse (issue 45; docs/bi.md, "Superset").

Runs with the Python of Superset's own venv (.thinktax/superset-venv, pins in tools/superset.txt), never
with .venv's: it imports Superset, which pins SQLAlchemy 1.4. Standard library and Superset only.

    python tools/superset_bi.py provision --home var/superset --warehouse var/thinktax.duckdb
    python tools/superset_bi.py serve --home var/superset [--port 8088]
    python tools/superset_bi.py init --home DIR     # steps 1-3 only, no warehouse (the browser test runs it
                                                    # while its warehouse is being built)

``provision`` (idempotent, what ``make bi`` runs):
  1. writes ``<home>/superset_config.py`` once (metadata DB ``<home>/superset.db``, a secret key made
     here, mode 600);
  2. creates or upgrades the metadata DB and Superset's roles (``superset db upgrade`` + ``init``), in
     this one process; skipped when the DB is already at Superset's head revision;
  3. creates the user ``admin``: password from THINKTAX_BI_PASSWORD, else generated and printed once;
  4. imports the dashboards from ``bi/superset/`` (Superset's own v1 import format, the files zipped as
     an export bundle) with the database's SQLAlchemy URI set to the warehouse path, read-only: the
     warehouse path is the one setting;
  5. reads each dataset's columns from the warehouse (Superset's "sync columns from source"), so the
     dataset files list no columns and follow the marts.

The warehouse must exist: run ``make run`` (or ``thinktax run``) first.
"""

from __future__ import annotations

import argparse
import io
import os
import secrets
import sys
import zipfile
from pathlib import Path

ASSETS = Path(__file__).resolve().parent.parent / "bi" / "superset"
DATABASE_FILE = "databases/thinktax.yaml"
USER = "admin"

CONFIG = '''\
# Written once by tools/superset_bi.py provision; Superset reads it through SUPERSET_CONFIG_PATH.
SECRET_KEY = {secret!r}
SQLALCHEMY_DATABASE_URI = {metadata!r}
# every chart of a dashboard is queried at once (the browser test waits for all of them)
FEATURE_FLAGS = {{"DASHBOARD_VIRTUALIZATION": False}}
# local, single user: no Celery, a simple in-process cache
CACHE_CONFIG = {{"CACHE_TYPE": "SimpleCache", "CACHE_DEFAULT_TIMEOUT": 300}}
DATA_CACHE_CONFIG = CACHE_CONFIG
# served on 127.0.0.1 only, over plain HTTP
TALISMAN_ENABLED = False
SESSION_COOKIE_SECURE = False
RATELIMIT_ENABLED = False
'''


def duckdb_uri(warehouse: Path) -> str:
    """duckdb-engine's URL of the warehouse, read-only (docs/bi.md: an absolute path gives four slashes)."""
    return f"duckdb:///{warehouse.resolve()}?access_mode=read_only"


def write_config(home: Path) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "superset_config.py"
    if not path.exists():
        text = CONFIG.format(secret=secrets.token_urlsafe(42), metadata=f"sqlite:///{(home / 'superset.db').resolve()}")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
    return path


def bundle(assets: Path, warehouse: Path) -> bytes:
    """The files under ``assets`` as a Superset export ZIP, the database pointed at ``warehouse``."""
    import yaml  # noqa: PLC0415  (Superset's venv has PyYAML)

    buf = io.BytesIO()
    files = sorted(p for p in assets.rglob("*.yaml") if p.is_file())
    if not any(p.relative_to(assets).as_posix() == DATABASE_FILE for p in files):
        raise SystemExit(f"{assets / DATABASE_FILE}: missing (the database every dataset points at)")
    with zipfile.ZipFile(buf, "w") as zf:
        for p in files:
            rel = p.relative_to(assets).as_posix()
            text = p.read_text(encoding="utf-8")
            try:
                doc = yaml.safe_load(text)
            except yaml.YAMLError as exc:
                raise SystemExit(f"{p}: not valid YAML: {exc}") from exc
            if rel == DATABASE_FILE:
                doc["sqlalchemy_uri"] = duckdb_uri(warehouse)
                text = yaml.safe_dump(doc, sort_keys=False)
            zf.writestr(f"thinktax_bi/{rel}", text)
    return buf.getvalue()


def _app(home: Path):
    os.environ["SUPERSET_CONFIG_PATH"] = str(write_config(home))
    os.environ.setdefault("SUPERSET_HOME", str(home))
    from superset.app import create_app  # noqa: PLC0415

    return create_app()


def _at_head() -> bool:
    from alembic.migration import MigrationContext  # noqa: PLC0415
    from alembic.script import ScriptDirectory  # noqa: PLC0415
    from flask import current_app  # noqa: PLC0415
    from superset.extensions import db  # noqa: PLC0415

    migrate = current_app.extensions["migrate"]
    script = ScriptDirectory.from_config(migrate.migrate.get_config(migrate.directory))
    with db.engine.connect() as con:
        current = MigrationContext.configure(con).get_current_heads()
    return set(current) == set(script.get_heads())


def _init() -> int:
    """Steps 2 and 3 (in an app context): the metadata DB at Superset's head revision, its roles, the user."""
    import flask_migrate  # noqa: PLC0415
    from flask import current_app  # noqa: PLC0415
    from superset import appbuilder, security_manager  # noqa: PLC0415

    if not _at_head():
        print("superset: creating the metadata database and roles (about a minute)", flush=True)
        flask_migrate.upgrade(directory=current_app.extensions["migrate"].directory)
        appbuilder.add_permissions(update_perms=True)
        security_manager.sync_role_definitions()
    if security_manager.find_user(username=USER) is None:
        password = os.environ.get("THINKTAX_BI_PASSWORD") or secrets.token_urlsafe(12)
        user = security_manager.add_user(USER, "thinktax", "admin", "admin@localhost",
                                         security_manager.find_role("Admin"), password=password)
        if not user:
            print("superset: could not create the user admin", file=sys.stderr)
            return 1
        if "THINKTAX_BI_PASSWORD" in os.environ:
            print(f"superset: user {USER} created with the password from THINKTAX_BI_PASSWORD")
        else:
            print(f"superset: user {USER} created, password {password} (printed once; set "
                  "THINKTAX_BI_PASSWORD before the first `make bi` to choose it)")
    return 0


def init(home: Path) -> int:
    """The metadata DB and the user only (no warehouse needed): the slow part of a first ``provision``."""
    with _app(home).app_context():
        return _init()


def provision(home: Path, warehouse: Path, assets: Path = ASSETS) -> int:
    if not warehouse.is_file():
        print(f"{warehouse}: no warehouse there; run `make run` (or `thinktax run`) first", file=sys.stderr)
        return 2
    app = _app(home)
    with app.app_context():
        from flask import g  # noqa: PLC0415
        from superset import security_manager  # noqa: PLC0415
        from superset.commands.dashboard.importers.dispatcher import ImportDashboardsCommand  # noqa: PLC0415
        from superset.commands.importers.v1.utils import get_contents_from_bundle  # noqa: PLC0415
        from superset.connectors.sqla.models import SqlaTable  # noqa: PLC0415
        from superset.extensions import db  # noqa: PLC0415
        from superset.models.dashboard import Dashboard  # noqa: PLC0415
        from superset.models.slice import Slice  # noqa: PLC0415

        if (rc := _init()) != 0:
            return rc
        g.user = security_manager.find_user(username=USER)
        with zipfile.ZipFile(io.BytesIO(bundle(assets, warehouse))) as zf:
            contents = get_contents_from_bundle(zf)
        ImportDashboardsCommand(contents, overwrite=True).run()
        datasets = db.session.query(SqlaTable).all()
        for ds in datasets:
            ds.fetch_metadata()
        db.session.commit()
        print(f"superset: {warehouse.resolve()} imported as database 'thinktax' (read-only): "
              f"{db.session.query(Dashboard).count()} dashboards, {db.session.query(Slice).count()} charts, "
              f"{len(datasets)} datasets")
    return 0


def serve(home: Path, port: int, host: str = "127.0.0.1") -> int:
    """Superset under gunicorn (one worker, threads) until stopped; replaces this process."""
    if not (home / "superset_config.py").exists():
        print(f"{home}: not provisioned; run `make bi` first", file=sys.stderr)
        return 2
    os.environ["SUPERSET_CONFIG_PATH"] = str((home / "superset_config.py").resolve())
    os.environ.setdefault("SUPERSET_HOME", str(home.resolve()))
    gunicorn = Path(sys.executable).with_name("gunicorn")
    print(f"superset: http://{host}:{port}/ (user {USER}); Ctrl-C stops it", flush=True)
    os.execv(str(gunicorn), [str(gunicorn), "--workers", "1", "--threads", "8", "--timeout", "120",
                             "--bind", f"{host}:{port}", "--access-logfile", "-", "superset.app:create_app()"])
    return 0  # not reached


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    i = sub.add_parser("init", help="only the metadata DB and the user admin (no warehouse needed)")
    i.add_argument("--home", type=Path, required=True)
    p = sub.add_parser("provision", help="metadata DB, user admin, dashboards from bi/superset/")
    p.add_argument("--home", type=Path, required=True)
    p.add_argument("--warehouse", type=Path, required=True)
    p.add_argument("--assets", type=Path, default=ASSETS)
    s = sub.add_parser("serve", help="serve on 127.0.0.1")
    s.add_argument("--home", type=Path, required=True)
    s.add_argument("--port", type=int, default=8088)
    a = ap.parse_args(argv)
    if a.cmd == "init":
        return init(a.home)
    if a.cmd == "provision":
        return provision(a.home, a.warehouse, a.assets)
    return serve(a.home, a.port)


if __name__ == "__main__":
    sys.exit(main())
