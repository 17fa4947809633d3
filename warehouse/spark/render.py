"""DuckDB-dialect model SQL -> Spark SQL: sqlglot's transpiler plus the rewrite rules it lacks.

The SQL files stay in DuckDB's dialect (the only definition of each model). ``to_spark`` parses a
model, applies the rules below to the syntax tree and prints it for Spark. Each rule is small and
has a test in tests/warehouse/test_sqltable.py; the parity suite (tests/warehouse/spark/) checks the result table by
table against DuckDB.

Rules (what sqlglot does not map, or maps wrongly):

* ``core.<macro>(...)`` -- the warehouse's SQL macros (migrations 005 and 095) are inlined: Spark
  has no SQL macros. ``core.in_build_*`` are TRUE there, as in DuckDB (the incremental plan
  replaces them with the build's days before rendering).
* ``HUGEINT`` -> ``DECIMAL(38,0)`` (sqlglot writes INT128, which Spark does not have).
* ``WITH x AS [NOT] MATERIALIZED (...)`` -> ``WITH x AS (...)``: a hint to DuckDB's planner, which
  Spark's parser does not take.
* ``list(v ORDER BY k [DESC])`` -> ``transform([reverse(]array_sort(collect_list(struct(k, v)))[)], x -> x.v)``;
  ``list(...)`` counts as an aggregate when ``GROUP BY ALL`` is spelled out.
* ``concat_ws(sep, ...)`` keeps skipping NULL parts (sqlglot would wrap each in ``COALESCE(x, '')``).
* ``to_days(n)`` -> ``make_dt_interval(n, 0, 0, 0)``.
* ``to_microseconds(n)`` -> ``make_dt_interval(0, 0, 0, n / 1e6)`` (an exact day-time interval).
* ``regexp_full_match(x, p)`` -> ``x RLIKE '^(?:p)$'`` (Spark has no full-match function).
* ``regexp_matches(x, p, 'i')`` / ``regexp_extract(x, p, g, 'i')`` -> the pattern prefixed with
  ``(?i)`` (sqlglot drops the flag); other flags fail at load.
* ``a / b`` -> ``CAST(a AS DOUBLE) / b``: DuckDB divides numbers (DECIMAL and integer included) as
  DOUBLE; Spark divides DECIMALs exactly and rounds half-way quotients the other way (91.270935 / 6:
  DuckDB 15.211822 after usd6, Spark 15.211823). Divisions with an interval operand are left alone.
* ``epoch(ts)`` -> ``unix_micros(ts) / 1e6`` as a DOUBLE, as DuckDB computes it (sqlglot writes
  ``UNIX_TIMESTAMP``: whole seconds in Spark).
* ``epoch_us(ts)`` -> ``unix_micros(ts)``; ``len(<list>)`` -> ``size``; ``list(x)`` ->
  ``collect_list``; ``list_distinct`` -> ``array_distinct``; ``json_type(x, p)`` -> 'ARRAY' /
  'OBJECT' / 'SCALAR' from the first character of the JSON value (only ARRAY and OBJECT match
  DuckDB's names).
* ``* EXCLUDE (...)``, ``* REPLACE (...)`` and ``UNION ALL BY NAME`` need the columns of what they
  read: with a ``schema`` (table -> columns, from the Spark catalog at build time) stars are
  expanded by sqlglot's column qualifier and BY NAME unions are put in the left side's column
  order (a column missing on one side is NULL there). This also avoids sqlglot's QUALIFY
  rewrite over ``* EXCLUDE``, which leaves its helper column ``_w`` in the output.
* NULL ordering: DuckDB sorts NULLs last, Spark first; sqlglot writes ``NULLS LAST`` where the
  DuckDB query relied on the default.
* ``GROUP BY ALL`` -> the non-aggregate select expressions without constants (Spark's own
  GROUP BY ALL keeps a literal ``0 AS calls`` as a key and then reads it as a column position).
* ``make_timestamp(us)`` -> ``CAST(timestamp_micros(us) AS TIMESTAMP_NTZ)`` (naive, as DuckDB's).
* Output column names keep the spelling of the SQL or of the table read (``BilledCost``, also
  through ``SELECT *``): the column qualifier lower-cases unquoted names, and the spelling is put back.

Not a rule but a convention for the SQL (both engines): a union of DECIMALs of different scales
is rounded to the smaller scale by DuckDB and not by Spark, so cast both sides to one scale when
the result is divided later (sql/marts/cost_per_task.sql); and DuckDB divides DECIMALs through
DOUBLE, so exact money division is written in integer arithmetic (``HUGEINT`` and ``//``).

What a Spark session must set for DuckDB's figures (``SESSION_CONF``): decimal arithmetic without
precision loss (else per-call costs move by micro-dollars and every check still passes), UTC as
the session time zone, and timestamps without time zone (DuckDB's TIMESTAMP).
"""

from __future__ import annotations

import json
import re
from functools import cache, lru_cache
from importlib import resources

SESSION_CONF = {
    "spark.sql.decimalOperations.allowPrecisionLoss": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.timestampType": "TIMESTAMP_NTZ",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    "spark.sql.legacy.timeParserPolicy": "CORRECTED",
}

_MACRO_DEF = re.compile(
    r"CREATE\s+OR\s+REPLACE\s+MACRO\s+core\.(\w+)\s*\(([^)]*)\)\s+AS\s+(.*?);", re.IGNORECASE | re.DOTALL)


class RenderError(ValueError):
    """A model (file named) with a construct that cannot be rendered for Spark."""


@cache
def macros() -> dict[str, tuple[tuple[str, ...], object]]:
    """name -> (parameter names, body syntax tree) of every core.* macro in the migrations."""
    import sqlglot  # noqa: PLC0415

    out = {}
    folder = resources.files("warehouse").joinpath("migrations")
    for f in sorted(folder.iterdir(), key=lambda p: p.name):
        if not f.name.endswith(".sql"):
            continue
        text = re.sub(r"--[^\n]*", "", f.read_text(encoding="utf-8"))
        for m in _MACRO_DEF.finditer(text):
            params = tuple(p.strip().lower() for p in m.group(2).split(",") if p.strip())
            out[m.group(1).lower()] = (params, sqlglot.parse_one(m.group(3), read="duckdb"))
    return out


def _inline_macros(tree, path: str, depth: int = 0):
    """Every core.<macro>(...) replaced by its body, macros called inside a macro's body too."""
    from sqlglot import exp  # noqa: PLC0415

    if depth > 16:
        raise RenderError(f"{path}: core.* macros nest more than 16 deep (a macro that calls itself?)")
    defs = macros()

    def repl(node):
        if (isinstance(node, exp.Dot) and isinstance(node.this, exp.Identifier) and node.this.name.lower() == "core"
                and isinstance(node.expression, exp.Anonymous)):
            name = node.expression.name.lower()
            if name not in defs:
                raise RenderError(f"{path}: core.{name}(...) is not a macro defined in warehouse/migrations")
            params, body = defs[name]
            args = [_inline_macros(a, path, depth) for a in node.expression.expressions]
            if len(args) != len(params):
                raise RenderError(f"{path}: core.{name} takes {len(params)} arguments, {len(args)} given")
            by_name = dict(zip(params, args, strict=True))

            def sub(n):
                if isinstance(n, exp.Column) and not n.table and n.name.lower() in by_name:
                    return exp.Paren(this=by_name[n.name.lower()].copy())
                return n

            # the body may call other macros (core.cloud_model_key calls core.model_key): inline those too
            return _inline_macros(exp.Paren(this=body.copy().transform(sub)), path, depth + 1)
        return node

    return tree.transform(repl)


def _flags_pattern(pattern, flags, path: str, func: str):
    """The pattern with DuckDB's regex flags folded in as an inline (?i)."""
    from sqlglot import exp  # noqa: PLC0415

    if flags is None:
        return pattern
    if not isinstance(flags, exp.Literal) or not flags.is_string:
        raise RenderError(f"{path}: {func} with non-literal options cannot be rendered for Spark")
    f = flags.this
    if set(f) - {"i", "c"}:
        raise RenderError(f"{path}: {func} option {f!r} has no Spark equivalent (only 'i' is rendered)")
    if "i" not in f:
        return pattern
    if not isinstance(pattern, exp.Literal) or not pattern.is_string:
        return exp.func("concat", exp.Literal.string("(?i)"), pattern)
    return exp.Literal.string("(?i)" + pattern.this)


def _is_list(node) -> bool:
    from sqlglot import exp  # noqa: PLC0415

    if isinstance(node, exp.Cast):
        return node.to.is_type(exp.DataType.Type.ARRAY)
    return isinstance(node, exp.ArrayFilter | exp.Array | exp.ArrayAgg | exp.ArraySort | exp.SortArray
                      | exp.ArrayConcat | exp.Split | exp.Anonymous) and (
        not isinstance(node, exp.Anonymous) or node.name.lower().startswith(("list_", "array_")))


def _json_type(args):
    from sqlglot import exp  # noqa: PLC0415

    value = exp.func("get_json_object", *args) if len(args) == 2 else args[0]
    first = exp.func("substr", exp.func("ltrim", value), exp.Literal.number(1), exp.Literal.number(1))
    return exp.Case(ifs=[
        exp.If(this=exp.Is(this=value.copy(), expression=exp.Null()), true=exp.Null()),
        exp.If(this=exp.EQ(this=first.copy(), expression=exp.Literal.string("[")), true=exp.Literal.string("ARRAY")),
        exp.If(this=exp.EQ(this=first, expression=exp.Literal.string("{")), true=exp.Literal.string("OBJECT")),
    ], default=exp.Literal.string("SCALAR"))


def _rules(tree, path: str):
    import sqlglot  # noqa: PLC0415
    from sqlglot import exp  # noqa: PLC0415

    def repl(node):
        if isinstance(node, exp.DataType) and node.this == exp.DataType.Type.INT128:
            return exp.DataType.build("DECIMAL(38,0)")
        if isinstance(node, exp.CTE) and node.args.get("materialized") is not None:
            # a DuckDB planning hint (WITH x AS [NOT] MATERIALIZED): Spark has no such syntax
            node = node.copy()
            node.set("materialized", None)
            return node
        if isinstance(node, exp.ConcatWs) and node.args.get("coalesce"):
            # DuckDB's concat_ws skips NULL arguments, as Spark's does: sqlglot's COALESCE(x, '')
            # wrapping would turn each NULL part into an empty one ('a++b')
            return exp.ConcatWs(expressions=[e.copy() for e in node.expressions])
        if isinstance(node, exp.ToDays):  # to_days(n): an interval of n whole days
            return sqlglot.parse_one(f"MAKE_DT_INTERVAL({node.this.sql('spark')}, 0, 0, 0)", read="spark")
        if isinstance(node, exp.RegexpFullMatch):
            # DuckDB's regexp_full_match(x, p): the whole string matches p; Spark has no such function
            if not isinstance(node.expression, exp.Literal) or not node.expression.is_string:
                raise RenderError(f"{path}: regexp_full_match with a pattern that is not a string literal")
            anchored = exp.Literal.string("^(?:" + node.expression.this + ")$")
            return exp.RegexpLike(this=node.this, expression=anchored)
        if isinstance(node, exp.RegexpLike):
            flag = node.args.get("flag")
            if flag is not None:
                return exp.RegexpLike(this=node.this, expression=_flags_pattern(node.expression, flag, path, "regexp_matches"))
        if isinstance(node, exp.RegexpExtract):
            params = node.args.get("parameters")
            if params is not None:
                new = node.copy()
                new.set("parameters", None)
                new.set("expression", _flags_pattern(node.expression, params, path, "regexp_extract"))
                return new
        if isinstance(node, exp.RegexpReplace) and node.args.get("modifiers") is not None:
            mods = node.args["modifiers"]
            if not isinstance(mods, exp.Literal) or set(mods.this) - {"g", "i", "c"}:
                raise RenderError(f"{path}: regexp_replace option {mods.sql()} has no Spark equivalent")
            if "g" not in mods.this:  # DuckDB replaces the first match only; Spark replaces all
                raise RenderError(f"{path}: regexp_replace without 'g' replaces the first match in DuckDB but every "
                                  "match in Spark; anchor the pattern or pass 'g'")
        if isinstance(node, exp.UnixToTime) and not node.args.get("_ntz"):
            # make_timestamp(us) is a naive timestamp (DuckDB's TIMESTAMP); Spark's is zoned (UTC session)
            inner = node.copy()
            inner.set("_ntz", True)
            return exp.cast(inner, exp.DataType.build("TIMESTAMP_NTZ", dialect="spark"))
        if isinstance(node, exp.Select) and isinstance(node.args.get("group"), exp.Group) and node.args["group"].args.get("all"):
            # GROUP BY ALL -> the non-aggregate select expressions, constants left out (Spark's own
            # GROUP BY ALL keeps a literal 0 and then reads it as a column position)
            keys = []
            for e in node.expressions:
                inner = e.this if isinstance(e, exp.Alias) else e
                if isinstance(inner, exp.Literal | exp.Null | exp.Boolean) or (
                        isinstance(inner, exp.Cast) and isinstance(inner.this, exp.Literal | exp.Null)):
                    continue
                if any(not a.find_ancestor(exp.Window) for a in inner.find_all(exp.AggFunc, exp.List)) or isinstance(inner, exp.AggFunc | exp.List):
                    continue
                keys.append(inner.copy())
            node.set("group", exp.Group(expressions=keys) if keys else None)  # in place: children still visited
            return node
        if (isinstance(node, exp.Div) and not node.meta.get("spark_exact")
                and not any(isinstance(n, exp.Interval) for side in (node.this, node.expression) for n in side.walk())
                and not (isinstance(node.this, exp.Cast) and node.this.to.is_type(exp.DataType.Type.DOUBLE))):
            # DuckDB's '/' on numbers is DOUBLE division (a DECIMAL or integer operand is cast to DOUBLE);
            # Spark divides DECIMALs exactly, which rounds half-way quotients the other way
            # (91.270935 / 6 = 15.2118225: DuckDB 15.211822, exact 15.211823)
            new = node.copy()
            new.set("this", exp.cast(node.this.copy(), exp.DataType.build("DOUBLE")))
            return new
        if isinstance(node, exp.TimeToUnix):
            # DuckDB's epoch(ts): seconds since the epoch as a DOUBLE with the micro-seconds kept
            # (micros / 1e6); sqlglot writes UNIX_TIMESTAMP, whole seconds in Spark
            return sqlglot.parse_one(
                f"UNIX_MICROS(CAST({node.this.sql('spark')} AS TIMESTAMP_LTZ)) / 1000000.0D", read="spark")
        if isinstance(node, exp.JSONType):
            return _json_type([node.this] + ([node.expression] if node.expression else []))
        if isinstance(node, exp.ParseJSON):  # json(x): the text itself (Spark has no JSON type)
            return node.this
        if isinstance(node, exp.List) and isinstance(node.expressions[0], exp.Order):
            # list(v ORDER BY k [DESC]) -> the values of collect_list(struct(k, v)) sorted by k (Spark's
            # collect_list takes no ORDER BY); one sort key only
            order = node.expressions[0]
            if len(order.expressions) != 1:
                raise RenderError(f"{path}: list(... ORDER BY ...) with more than one sort key")
            key = order.expressions[0]
            sorted_ = f"ARRAY_SORT(COLLECT_LIST(STRUCT({key.this.sql('spark')} AS k, {order.this.sql('spark')} AS v)))"
            if key.args.get("desc"):
                sorted_ = f"REVERSE({sorted_})"
            return sqlglot.parse_one(f"TRANSFORM({sorted_}, sorted_entry -> sorted_entry.v)", read="spark")
        if isinstance(node, exp.List):  # list(x) -> collect_list (NULLs left out: only under list_distinct here)
            return exp.ArrayAgg(this=node.expressions[0])
        if isinstance(node, exp.Anonymous):
            name = node.name.lower()
            if name == "epoch_us":  # the naive UTC timestamp as micro-seconds since the epoch
                return exp.func("unix_micros", exp.cast(node.expressions[0], exp.DataType.build("TIMESTAMPLTZ")))
            if name == "to_microseconds":  # an interval of n micro-seconds: Spark's day-time interval, exact
                micros = node.expressions[0].sql("spark")
                out = sqlglot.parse_one(
                    f"MAKE_DT_INTERVAL(0, 0, 0, CAST(CAST({micros} AS DECIMAL(38, 6)) / 1000000 AS DECIMAL(18, 6)))", read="spark")
                for d in out.find_all(exp.Div):
                    d.meta["spark_exact"] = True  # exact seconds: not DuckDB's DOUBLE division
                return out
            if name == "list_distinct":
                return exp.func("array_distinct", *node.expressions)
            if name == "json_type":
                return _json_type(node.expressions)
            if name == "json":
                return node.expressions[0]
            if name == "list":
                return exp.func("collect_list", *node.expressions)
        if isinstance(node, exp.Length) and _is_list(node.this):
            return exp.ArraySize(this=node.this)
        return node

    # a replaced node's children are not visited by transform: repeat until nothing changes
    for _ in range(6):
        before = tree.sql(dialect="duckdb")
        tree = tree.transform(repl)
        if tree.sql(dialect="duckdb") == before:
            return tree
    return tree


def _post_order(node):
    for child in node.iter_expressions():
        yield from _post_order(child)
    yield node


def _by_name_unions(tree, schema: dict, path: str):
    """UNION [ALL] BY NAME -> a plain union whose sides list the same columns in the same order
    (the left side's, then those only on the right); a column missing on one side is NULL there.
    Innermost first, so a chain (a BY NAME b) BY NAME c sees every column of a and b."""
    from sqlglot import exp  # noqa: PLC0415

    def names(branch) -> list[str]:
        q = exp.select("*").from_(exp.Subquery(this=branch.copy(), alias=exp.to_identifier("_b")))
        if tree.args.get("with") is not None:
            q.set("with", tree.args["with"].copy())
        return [e.alias_or_name for e in _expand_stars(q, schema, path).expressions]

    def aligned(branch, have: list[str], want: list[str]):
        if have == want:
            return branch
        cols = [exp.column(n) if n in have else exp.alias_(exp.Null(), n) for n in want]
        inner = branch.this if isinstance(branch, exp.Subquery) else branch
        return exp.select(*cols).from_(exp.Subquery(this=inner, alias=exp.to_identifier("_bn")))

    while True:
        node = next((n for n in _post_order(tree) if isinstance(n, exp.Union) and n.args.get("by_name")), None)
        if node is None:
            return tree
        left, right = names(node.left), names(node.right)
        want = left + [n for n in right if n not in left]
        node.set("this", aligned(node.left, left, want))
        node.set("expression", aligned(node.right, right, want))
        node.set("by_name", None)


def _expand_stars(tree, schema: dict, path: str):
    from sqlglot import exp  # noqa: PLC0415
    from sqlglot.optimizer.qualify import qualify  # noqa: PLC0415

    # the qualifier lower-cases unquoted names (DuckDB resolves them case-insensitively); output
    # columns keep the spelling the SQL gave them ('BilledCost' in marts.focus_costs)
    spelled = {c.lower(): c for tables in schema.values() for cols in tables.values() for c in cols if c != c.lower()}
    spelled |= {i.name.lower(): i.name for i in tree.find_all(exp.Identifier) if i.name != i.name.lower()}
    try:
        out = qualify(tree, dialect="duckdb", schema=schema, expand_stars=True, validate_qualify_columns=False,
                      quote_identifiers=False, identify=False, expand_alias_refs=False)
    except Exception as exc:  # sqlglot's OptimizeError and friends
        raise RenderError(f"{path}: cannot expand the stars for Spark: {exc}") from exc
    if spelled:
        for i in out.find_all(exp.Identifier):
            if i.name in spelled:
                i.set("this", spelled[i.name])
    return out


def to_spark(sql: str, *, path: str = "<sql>", schema: dict | None = None, databases: dict[str, str] | None = None) -> str:
    """The model's SQL in Spark's dialect. ``schema``: {'db': {'table': {'col': 'type'}}} of the
    tables it reads (stars and BY NAME unions need it; without it they are left for a later render
    and only checked). ``databases`` maps warehouse schemas to Spark databases ({'core': 'tt_core'}).

    A pure function of its arguments, so a process renders each (SQL, schema, databases) once: a
    build of every model spent ~22 of 100 s in sqlglot (parse, rules, star expansion, print) on a
    local session, and a process that builds again (the journal's swap, a nightly after a full run,
    `thinktax sql --engine spark` after a run) finds the SQL it rendered before. The schema is part
    of the key in its column order (a star expands in that order)."""
    return _to_spark(sql, path, None if schema is None else json.dumps(schema),
                     tuple(databases.items()) if databases else None)


@lru_cache(maxsize=1024)
def _to_spark(sql: str, path: str, schema_json: str | None, databases_items: tuple[tuple[str, str], ...] | None) -> str:
    schema: dict | None = None if schema_json is None else json.loads(schema_json)
    databases = dict(databases_items) if databases_items else None
    import sqlglot  # noqa: PLC0415
    from sqlglot import exp  # noqa: PLC0415
    from sqlglot.errors import SqlglotError  # noqa: PLC0415

    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except SqlglotError as exc:
        raise RenderError(f"{path}: sqlglot cannot parse it: {exc}") from exc
    tree = _inline_macros(tree, path)
    tree = _rules(tree, path)
    if schema is not None:
        tree = _by_name_unions(tree, schema, path)
        tree = _expand_stars(tree, schema, path)
    if databases:
        for t in tree.find_all(exp.Table):
            if t.db and t.db.lower() in databases:
                t.set("db", exp.to_identifier(databases[t.db.lower()]))
    try:
        return tree.sql(dialect="spark", unsupported_level=sqlglot.ErrorLevel.RAISE)
    except SqlglotError as exc:
        raise RenderError(f"{path}: cannot be rendered for Spark: {exc}") from exc


@cache
def load_spark_tables() -> tuple:
    """Every SQL table (warehouse.sqltable, in dependency order), each rendered for Spark SQL once
    here, so that a model Spark cannot run fails at load, naming its file and the construct."""
    from warehouse.sqltable import load_tables  # noqa: PLC0415

    models = load_tables()
    for m in models:
        to_spark(m.sql, path=m.path)  # raises RenderError naming the file and the construct
    return models
