\set a random(1, 1000000)
\set delta random(-100, 100)
BEGIN ISOLATION LEVEL SERIALIZABLE \; SELECT abalance FROM pgbench_accounts WHERE aid = :a;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :a;
COMMIT;
