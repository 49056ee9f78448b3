-- Issue 24: the second row is a function of the first (the next account,
-- wrapping at :rows), SERIALIZABLE read-modify-write of both. Transactions
-- on neighbouring first rows conflict through the second; a statement
-- template could predict it from the first statement's parameter.
\set a random(1, :rows)
\set b :a % :rows + 1
\set delta random(-100, 100)
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT abalance FROM pgbench_accounts WHERE aid = :a;
UPDATE pgbench_accounts SET abalance = abalance - :delta WHERE aid = :a;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :b;
COMMIT;
