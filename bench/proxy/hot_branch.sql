-- Hot-spot splitting in the proxy (issue 16, bench/proxy/split.sh): a hot
-- branch. HOT percent of transactions belong to branch 1, the rest to
-- branches 2..:branches uniformly. Each updates one account of its branch
-- (accounts differ: no conflict), waits :think_ms inside the transaction
-- (an application round trip), and one in :every also adds to its
-- branch's total: two of those on one branch at once conflict under
-- REPEATABLE READ (40001), which is what teaches a router that the branch
-- is hot. Routing every transaction of branch 1 onto one backend then
-- serializes 60% of the load behind one connection; splitting spreads it.
\set hot random(1, 100)
\if :hot <= :hotpct
\set bid 1
\else
\set bid random(2, :branches)
\endif
\set aid (:bid - 1) * 100000 + random(1, 100000)
\set delta random(-100, 100)
\set pick random(1, :every)
BEGIN ISOLATION LEVEL REPEATABLE READ;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE bid = :bid AND aid = :aid;
SELECT pg_sleep(:think_ms / 1000.0);
\if :pick = 1
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
\endif
COMMIT;
