\set a random(1, 20)
\set b random(1, 20)
\set delta random(-100, 100)
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT abalance FROM pgbench_accounts WHERE aid = :a;
SELECT abalance FROM pgbench_accounts WHERE aid = :b;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :a;
UPDATE pgbench_accounts SET abalance = abalance - :delta WHERE aid = :b;
COMMIT;
