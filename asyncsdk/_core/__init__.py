"""The engine: one call's life from operation to data or error, knowing no area of the
interface and no model (docs/architecture.md)."""
