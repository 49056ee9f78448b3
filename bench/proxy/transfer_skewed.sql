-- Issue 24: a transfer whose second row is independent of the first and
-- drawn from a skewed distribution (Zipf, s = 1.5, over the same :rows
-- when -D skew=1; uniform with skew=0), blind writes (no values returned),
-- SERIALIZABLE. The proxy routes by the first statement (aid = :a); the
-- hot second row is invisible when the backend is chosen.
\set a random(1, :rows)
\if :skew
\set b random_zipfian(1, :rows, 1.5)
\else
\set b random(1, :rows)
\endif
\set delta random(1, 100)
BEGIN ISOLATION LEVEL SERIALIZABLE;
UPDATE pgbench_accounts SET abalance = abalance - :delta WHERE aid = :a;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :b;
COMMIT;
