-- The models a run rebuilds at all (ops.build_scope.tables): a model whose inputs did not change
-- keeps its table as published. NULL = every model (a full rebuild, or an older plan).
ALTER TABLE ops.build_scope ADD COLUMN IF NOT EXISTS tables VARCHAR[];
