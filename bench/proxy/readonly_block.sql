-- A read-only transaction of two account reads (an ORM's read path, a
-- driver's read_only mode): below SERIALIZABLE it cannot conflict, so
-- Corral runs it unscheduled (free_reads; README "Proxy").
\set a random(1, 100000 * :scale)
\set b random(1, 100000 * :scale)
BEGIN READ ONLY;
SELECT abalance FROM pgbench_accounts WHERE aid = :a;
SELECT abalance FROM pgbench_accounts WHERE aid = :b;
COMMIT;
