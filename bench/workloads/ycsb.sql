-- YCSB's single table (schemas/ has no YCSB DDL; this is the one the YCSB
-- workload's SQL form is written against). Plain PostgreSQL DDL.
CREATE TABLE usertable (
  ycsb_key BIGINT NOT NULL,
  field0 VARCHAR(100), field1 VARCHAR(100), field2 VARCHAR(100), field3 VARCHAR(100),
  field4 VARCHAR(100), field5 VARCHAR(100), field6 VARCHAR(100), field7 VARCHAR(100),
  field8 VARCHAR(100), field9 VARCHAR(100),
  counter BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (ycsb_key)
);
