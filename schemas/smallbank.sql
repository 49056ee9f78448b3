-- SmallBank schema with keys. Plain PostgreSQL DDL (loads into PostgreSQL 15);
-- canonical classes: savings.custid, checking.custid -> accounts.custid.
-- `custid` is held by three tables, so its class is named `accounts.custid`
-- and literal references are table-qualified (`savings.custid=7`).

CREATE TABLE accounts (
  custid BIGINT      NOT NULL,
  name   VARCHAR(64) NOT NULL,
  PRIMARY KEY (custid)
);

CREATE TABLE savings (
  custid BIGINT NOT NULL REFERENCES accounts (custid),
  bal    DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (custid)
);

CREATE TABLE checking (
  custid BIGINT NOT NULL REFERENCES accounts (custid),
  bal    DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (custid)
);

CREATE INDEX idx_accounts_name ON accounts (name);
