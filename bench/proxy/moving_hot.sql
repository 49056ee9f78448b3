-- Issue 16's proxy check: hot_row.sql's transaction on a hot set that moves.
-- The set is rows :off+1 .. :off+:rows. With -D read_off=1 :off is read
-- (outside the transaction, its own autocommit statement) from corral_hot,
-- which bench/proxy/moving.sh moves to a new range every WINDOW seconds;
-- with -D read_off=0 -D off=N it is given (moving.sh OFFSET=arg: one pgbench
-- per window, issue 16's "\set over a range that moves").
\if :read_off
SELECT off FROM corral_hot \gset
\endif
\set a :off + random(1, :rows)
\set delta random(-100, 100)
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT abalance FROM pgbench_accounts WHERE aid = :a;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :a;
COMMIT;
