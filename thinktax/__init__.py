"""thinktax: cost analytics for reasoning-model inference."""
