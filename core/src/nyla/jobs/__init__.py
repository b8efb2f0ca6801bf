"""Background job records: progress, cancellation and zombie recovery (the embedded default;
a Postgres-backed task queue takes over past one machine)."""
