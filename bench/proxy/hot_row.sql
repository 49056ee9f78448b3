-- The standard contended transaction (issue 9): its one row is named by the
-- first statement, so a router sees the conflict before the transaction
-- starts. SERIALIZABLE read-modify-write of one pgbench_accounts row out of
-- :rows (run.sh: -D rows=20 hot, -D rows=<all accounts> cold).
\set a random(1, :rows)
\set delta random(-100, 100)
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT abalance FROM pgbench_accounts WHERE aid = :a;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :a;
COMMIT;
