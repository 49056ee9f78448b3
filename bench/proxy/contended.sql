-- The hard case: two random rows out of :rows (run.sh: -D rows=20 hot,
-- -D rows=<all accounts> cold), SERIALIZABLE. The proxy routes by the first
-- statement (aid = :a); the conflict through :b is invisible when the
-- backend is chosen.
\set a random(1, :rows)
\set b random(1, :rows)
\set delta random(-100, 100)
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT abalance FROM pgbench_accounts WHERE aid = :a;
SELECT abalance FROM pgbench_accounts WHERE aid = :b;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :a;
UPDATE pgbench_accounts SET abalance = abalance - :delta WHERE aid = :b;
COMMIT;
