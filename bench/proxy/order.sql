-- Issue 24: a three-statement order: the customer's row (accounts above
-- :rows, uniform: cold), then two stock rows from the set 1..:rows (run.sh:
-- -D rows=20 hot, -D rows=<half the accounts> cold), SERIALIZABLE. The
-- first statement names only the customer; the contended stock rows come
-- later.
\set c random(:rows + 1, :naccounts)
\set s1 random(1, :rows)
\set s2 random(1, :rows)
\set qty random(1, 10)
BEGIN ISOLATION LEVEL SERIALIZABLE;
UPDATE pgbench_accounts SET abalance = abalance - :qty WHERE aid = :c;
UPDATE pgbench_accounts SET abalance = abalance - :qty WHERE aid = :s1;
UPDATE pgbench_accounts SET abalance = abalance - :qty WHERE aid = :s2;
COMMIT;
