-- The unknown-field guard (issue 44): the keys of a JSON file's records its parser does not read.
-- grain: one row per (file, unknown key path). Written with the file's ingest, in its transaction.
CREATE TABLE IF NOT EXISTS ops.unknown_fields (
    file_id         INTEGER NOT NULL,  -- ops.ingested_files.file_id
    source          VARCHAR NOT NULL,  -- the parser's format, e.g. 'requests_jsonl'
    file            VARCHAR NOT NULL,  -- path relative to the landing folder
    path            VARCHAR NOT NULL,  -- dotted key path from the record's root, e.g. 'usage.output_tokens_details.foo_tokens'
    first_line      BIGINT NOT NULL,   -- first line that carries it
    records         BIGINT NOT NULL,   -- lines that carry it
    token_like      BOOLEAN NOT NULL,  -- looks like a token count (*_tokens, *TokenCount, *_tokens_details.*, ...)
    nonzero_records BIGINT NOT NULL,   -- lines where a token-looking value is not 0 / empty (their calls are partially priced)
    example         VARCHAR,           -- its value on the first line, as JSON text (200 characters at most)
    found_at        TIMESTAMP NOT NULL -- when the file was ingested
);
-- grain: one row per (file, line, path): the calls partially priced because of a token-looking unknown path.
CREATE TABLE IF NOT EXISTS ops.unknown_field_lines (
    file_id INTEGER NOT NULL,  -- ops.ingested_files.file_id
    line    BIGINT NOT NULL,   -- the line of the call in its file (stg.requests.line)
    path    VARCHAR NOT NULL,  -- the unknown token-looking path it carries with a non-zero value
    request_id VARCHAR         -- the call, where a line holds several (an OTLP document line); NULL: the line is the call
);
