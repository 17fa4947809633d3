-- Every unit a call is billed in (issue 44): usage by modality and non-token units on the calls,
-- prices by modality and unit on the price sheets. NULL = 0 / not reported / not given, so a call or
-- a sheet row loaded before these columns existed and the same one re-exported now are one row.

-- the non-text parts of a call's token buckets (each part of the bucket named), and its non-token units
ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS audio_input_tokens BIGINT;         -- of uncached_input_tokens
ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS image_input_tokens BIGINT;         -- of uncached_input_tokens
ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS video_input_tokens BIGINT;         -- of uncached_input_tokens
ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS cached_audio_input_tokens BIGINT;  -- of cached_input_tokens
ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS audio_output_tokens BIGINT;        -- of output_tokens
ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS image_output_tokens BIGINT;        -- of output_tokens
ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS video_output_tokens BIGINT;        -- of output_tokens
ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS output_images BIGINT;              -- images generated
ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS output_video_seconds DECIMAL(18,3);  -- seconds of video generated
ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS image_size VARCHAR;                -- WIDTHxHEIGHT of the images
ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS image_quality VARCHAR;             -- low / medium / high / standard / hd
ALTER TABLE stg.requests ADD COLUMN IF NOT EXISTS video_resolution VARCHAR;          -- e.g. 720p, 1080p

-- prices by modality (USD per million tokens) and per unit (USD per image, per second of video)
ALTER TABLE stg.llm_prices ADD COLUMN IF NOT EXISTS audio_input_usd_per_mtok DECIMAL(18,9);
ALTER TABLE stg.llm_prices ADD COLUMN IF NOT EXISTS cached_audio_input_usd_per_mtok DECIMAL(18,9);
ALTER TABLE stg.llm_prices ADD COLUMN IF NOT EXISTS image_input_usd_per_mtok DECIMAL(18,9);
ALTER TABLE stg.llm_prices ADD COLUMN IF NOT EXISTS video_input_usd_per_mtok DECIMAL(18,9);
ALTER TABLE stg.llm_prices ADD COLUMN IF NOT EXISTS audio_output_usd_per_mtok DECIMAL(18,9);
ALTER TABLE stg.llm_prices ADD COLUMN IF NOT EXISTS image_output_usd_per_mtok DECIMAL(18,9);
ALTER TABLE stg.llm_prices ADD COLUMN IF NOT EXISTS video_output_usd_per_mtok DECIMAL(18,9);
ALTER TABLE stg.llm_prices ADD COLUMN IF NOT EXISTS usd_per_output_image DECIMAL(18,9);
ALTER TABLE stg.llm_prices ADD COLUMN IF NOT EXISTS usd_per_output_video_second DECIMAL(18,9);
