-- moving_hot.sql's transaction with the window's offset given by pgbench
-- (-D off=N) instead of read per transaction: bench/proxy/moving.sh with
-- INTERLEAVE=1 OFFSET=arg runs one pgbench per window and passes the
-- window's offset, as issue 16 suggests (a \set over a moving range); the
-- hot set is rows :off+1 .. :off+:rows.
\set a :off + random(1, :rows)
\set delta random(-100, 100)
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT abalance FROM pgbench_accounts WHERE aid = :a;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :a;
COMMIT;
