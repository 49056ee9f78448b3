-- A scripted psql session for tests/drivers/drivers_test.cc: COPY FROM STDIN,
-- \copy out to a file and back in, a multi-statement query (\; sends both
-- statements in one Query message), a rolled-back and a committed
-- transaction, COPY TO STDOUT. \copy does not expand psql variables, so the
-- test writes a copy with TBL (a table name) and DIR (a scratch directory)
-- replaced, and runs it with
--   psql -X -q -At -v ON_ERROR_STOP=1 -f session.sql
CREATE TABLE TBL (k int PRIMARY KEY, v text);
COPY TBL FROM STDIN;
1	one
2	two
3	three
\.
\copy TBL TO 'DIR/TBL.tsv'
CREATE TABLE TBL_2 (k int PRIMARY KEY, v text);
\copy TBL_2 FROM 'DIR/TBL.tsv'
SELECT count(*), sum(k) FROM TBL_2 \; SELECT string_agg(v, ',' ORDER BY k) FROM TBL_2;
BEGIN;
INSERT INTO TBL_2 VALUES (4, 'four');
ROLLBACK;
BEGIN;
UPDATE TBL_2 SET v = upper(v) WHERE k = 2;
COMMIT;
COPY (SELECT k, v FROM TBL_2 ORDER BY k) TO STDOUT;
DROP TABLE TBL \; DROP TABLE TBL_2;
