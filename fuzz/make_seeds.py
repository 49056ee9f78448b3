#!/usr/bin/env python3
"""Writes the seed corpora of the libFuzzer targets (scripts/fuzz.sh).

Seeds are real messages: a psql / pgbench / pgjdbc startup, Parse/Bind/
Execute of TPC-C statements, a SCRAM exchange, md5, a userlist, and the
benchmark schemas' statements. Files are named seed-<what>; inputs that once
found a bug are named crash-<what> and are written by hand, not by this
script. Re-running it rewrites the seeds only.

    python3 fuzz/make_seeds.py
"""
import os
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write(target_dir, name, data):
    d = os.path.join(ROOT, target_dir)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


# ---------------------------------------------------------------- wire
def cstr(s):
    return (s.encode() if isinstance(s, str) else s) + b"\0"


def msg(t, body):
    return t.encode() + struct.pack("!i", len(body) + 4) + body


def startup(params, code=196608):
    body = struct.pack("!i", code) + b"".join(cstr(k) + cstr(v) for k, v in params) + b"\0"
    return struct.pack("!i", len(body) + 4) + body


def parse(name, sql, oids=()):
    return msg("P", cstr(name) + cstr(sql) + struct.pack("!h", len(oids)) + b"".join(struct.pack("!i", o) for o in oids))


def bind(portal, stmt, params, formats=(), result_formats=()):
    body = cstr(portal) + cstr(stmt) + struct.pack("!h", len(formats))
    body += b"".join(struct.pack("!h", f) for f in formats)
    body += struct.pack("!h", len(params))
    for p in params:
        if p is None:
            body += struct.pack("!i", -1)
        else:
            p = p.encode() if isinstance(p, str) else p
            body += struct.pack("!i", len(p)) + p
    body += struct.pack("!h", len(result_formats)) + b"".join(struct.pack("!h", f) for f in result_formats)
    return msg("B", body)


def describe(kind, name):
    return msg("D", kind.encode() + cstr(name))


def execute(portal="", rows=0):
    return msg("E", cstr(portal) + struct.pack("!i", rows))


SYNC = msg("S", b"")
TERM = msg("X", b"")
W = "adapters/proxy/fuzz_corpus/wire_fuzzer"
PSQL = [("user", "postgres"), ("database", "tpcc"), ("application_name", "psql"), ("client_encoding", "UTF8")]
JDBC = [("user", "alice"), ("database", "tpcc"), ("client_encoding", "UTF8"), ("DateStyle", "ISO"),
        ("TimeZone", "UTC"), ("extra_float_digits", "2")]

write(W, "psql-simple", startup(PSQL) + msg("Q", cstr("SELECT w_tax FROM warehouse WHERE w_id = 5")) + TERM)
write(W, "ssl-then-startup", struct.pack("!ii", 8, 80877103) + startup(PSQL) + msg("Q", cstr("BEGIN")) +
      msg("Q", cstr("COMMIT")) + TERM)
write(W, "gssenc-then-startup", struct.pack("!ii", 8, 80877104) + startup(PSQL) + TERM)
write(W, "cancel", struct.pack("!iiii", 16, 80877102, 4242, 0x1234567))
write(W, "protocol2", startup([("user", "x")], code=0x20000))
write(W, "pgbench-extended",
      startup([("user", "postgres"), ("database", "bench"), ("application_name", "pgbench")]) +
      parse("", "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2;") +
      bind("", "", ["-1234", "77"]) + describe("P", "") + execute() + SYNC + TERM)
write(W, "pgbench-prepared",
      startup([("user", "postgres"), ("database", "bench")]) +
      parse("P0_1", "SELECT abalance FROM pgbench_accounts WHERE aid = $1;") + describe("S", "P0_1") + SYNC +
      bind("", "P0_1", ["12"]) + execute() + SYNC + msg("C", b"SP0_1\0") + SYNC + TERM)
write(W, "tpcc-new-order",
      startup(JDBC) +
      parse("S_1", "UPDATE stock SET s_quantity = $1 WHERE s_i_id = $2 AND s_w_id = $3", (23, 23, 23)) +
      bind("", "S_1", ["17", "2", "5"]) + execute() +
      parse("S_2", "SELECT c_discount, c_last, c_credit FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3") +
      bind("C_3", "S_2", [b"\x00\x00\x00\x05", b"\x00\x00\x00\x03", None], formats=(1,), result_formats=(0, 1, 0)) +
      describe("P", "C_3") + execute("C_3", 10) + SYNC + TERM)
write(W, "sasl",
      startup([("user", "alice"), ("database", "tpcc")]) +
      msg("p", cstr("SCRAM-SHA-256") + struct.pack("!i", 32) + b"n,,n=,r=rOprNGfwEbeRWgbNEkqO0123") +
      msg("p", b"c=biws,r=rOprNGfwEbeRWgbNEkqO0123srv,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=") +
      msg("Q", cstr("SHOW POOLS")))
write(W, "md5-password", startup([("user", "bob")]) + msg("p", cstr("md5e5b9ecfb32c6c9a1c9e0d5e3a1b2c3d4")))
write(W, "copy-in", startup(PSQL) + msg("Q", cstr("COPY item FROM STDIN")) + msg("d", b"1\t2\tx\n") +
      msg("d", b"\\.\n") + msg("c", b"") + msg("f", cstr("aborted")) + msg("H", b"") + msg("F", b"\0\0\0\x01"))
write(W, "error-fields", startup(PSQL) +
      msg("N", b"SERROR\0VERROR\0C40001\0Mcould not serialize access\0Dfrom the fuzzer\0\0") + SYNC)
write(W, "bad-length", startup(PSQL) + b"Q\x00\x00\x00\x02")
write(W, "huge-length", startup(PSQL) + b"Q\x7f\xff\xff\xff")
write(W, "startup-no-terminator", struct.pack("!ii", 17, 196608) + b"user\0alice\0")
write(W, "bind-negative-counts", startup(PSQL) + msg("B", b"\0\0\xff\xff\xff\xfe\0\0\0\0") + SYNC)

# ---------------------------------------------------------------- auth
A = "adapters/proxy/fuzz_corpus/auth_fuzzer"
write(A, "scram-no-password", b"\x00n,,n=,r=rOprNGfwEbeRWgbNEkqO\0"
      b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
write(A, "scram-y-header", b"\x00y,,n=alice,r=abc\0c=eSws,r=abc,p=AAAA")
write(A, "scram-channel-binding", b"\x00p=tls-server-end-point,,n=,r=abc\0")
write(A, "scram-right-password", b"\x01fuzz-secret\0\0")
write(A, "scram-wrong-password", b"\x01fuzz-secreT\0\0")
write(A, "scram-extended-first", b"\x01fuzz-secret\0,x=extension\0")
write(A, "scram-edited-final", b"\x01fuzz-secret\0\0\x09Z")
write(A, "scram-edited-proof", b"\x01fuzz-secret\0\0\x50=")
write(A, "scram-hostile-server", b"\x02r=srv,s=QSXCR+Q6sek8bf92,i=4\0v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
write(A, "scram-server-many-iterations", b"\x02r=srv,s=QSXCR+Q6sek8bf92,i=2000000000\0")
write(A, "scram-server-bad-salt", b"\x02r=srv,s=Q,i=4\0v=")
write(A, "md5", b"\x03alice\0secret\0\x01\x02\x03\x04")
write(A, "md5-stored", b"\x03alice\0md5" + b"0" * 32 + b"\0salt")
write(A, "userlist", b"\x04\"alice\" \"secret\"\n; comment\n# comment\n\n\"bob\" \"pa\"\"ss\"\n")
write(A, "userlist-bad", b"\x04\"alice\" secret\n")
write(A, "base64", b"\x05QUJD")
write(A, "base64-padded", b"\x05AAA=")
write(A, "base64-pad-only", b"\x05====")
write(A, "base64-spaces", b"\x05  ==")

# ---------------------------------------------------------------- refs
R = "policies/fuzz_corpus/ref_extractor_fuzzer"
TPCC, SMALLBANK, TATP, NONE = 0, 1, 2, 3
CAN, ALL = 4, 8


def ref(name, control, sql, params=None):
    data = bytes([control]) + sql.encode()
    if params is not None:
        data += b"\0" + b"".join((b"\xff" if p is None else p.encode()) + b"\0" for p in params)
    write(R, name, data)


ref("tpcc-stock-literal", TPCC | CAN | ALL, "UPDATE stock SET s_quantity = 17 WHERE s_i_id = 2 AND s_w_id = 5")
ref("tpcc-stock-params", TPCC | CAN | ALL, "UPDATE stock SET s_quantity = $1 WHERE s_i_id = $2 AND s_w_id = $3",
    ["17", "2", "5"])
ref("tpcc-stock-null-param", TPCC | CAN, "UPDATE stock SET s_quantity = $1 WHERE s_i_id = $2 AND s_w_id = $3",
    ["17", None, "5"])
ref("tpcc-customer-by-name", TPCC, "SELECT c_id FROM customer WHERE c_w_id = 1 AND c_d_id = 3 "
    "AND c_last = 'BARBARABLE' ORDER BY c_first")
ref("tpcc-district", TPCC | ALL, "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = $1 AND d_id = $2",
    ["5", "7"])
ref("tpcc-order-line-in", TPCC | CAN | ALL, "SELECT ol_i_id FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 2 "
    "AND ol_o_id IN (3001, 3002, 3003)")
ref("tpcc-stock-level-join", TPCC | CAN, "SELECT COUNT(DISTINCT (s_i_id)) FROM order_line JOIN stock ON "
    "s_i_id = ol_i_id WHERE ol_w_id = 1 AND ol_d_id = 4 AND ol_o_id < 3001 AND ol_o_id >= 2981 "
    "AND s_w_id = 1 AND s_quantity < 15")
ref("tpcc-insert", TPCC | CAN | ALL, "INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (3001, 4, 1), "
    "(3002, 4, 1)")
ref("tpcc-insert-no-columns", TPCC, "INSERT INTO new_order VALUES ($1, $2, $3)", ["3001", "4", "1"])
ref("tpcc-delivery-sub", TPCC | CAN | ALL, "DELETE FROM new_order WHERE no_w_id = 1 AND no_d_id = 2 AND no_o_id = "
    "(SELECT MIN(no_o_id) FROM new_order WHERE no_w_id = 1 AND no_d_id = 2)")
ref("tpcc-cte-union", TPCC | ALL, "WITH x AS (SELECT * FROM item WHERE i_id = 9) SELECT * FROM x UNION "
    "SELECT * FROM item WHERE i_id = 10")
ref("tpcc-or-not", TPCC | CAN, "SELECT * FROM warehouse WHERE w_id = 1 OR NOT (w_id = 2)")
ref("tpcc-multi-statement", TPCC | CAN | ALL, "BEGIN; SELECT w_tax FROM warehouse WHERE w_id = 3; "
    "UPDATE warehouse SET w_ytd = w_ytd + 10.5 WHERE w_id = 3; COMMIT")
ref("tpcc-casts-strings", TPCC | CAN, "SELECT * FROM customer WHERE c_w_id = '5'::int AND c_last = E'O''Brien' "
    "AND c_d_id = $1::integer", ["3"])
ref("tpcc-dollar-quote", TPCC, "SELECT * FROM customer WHERE c_last = $$it's$$ AND c_w_id = -5")
ref("tpcc-syntax-error", TPCC | CAN, "SELEC * FROM warehouse WHERE w_id = 1")
ref("tpcc-unbound-param", TPCC | CAN, "SELECT * FROM warehouse WHERE w_id = $2", ["1"])
ref("tpcc-function-call", TPCC | CAN | ALL, "SELECT * FROM new_order($1, $2, 3, $3)", ["1", "2", "5"])
ref("smallbank-balance", SMALLBANK | CAN, "SELECT bal FROM savings WHERE custid = $1", ["42"])
ref("smallbank-amalgamate", SMALLBANK | CAN | ALL, "UPDATE checking SET bal = bal + $1 WHERE custid = $2",
    ["10.5", "7"])
ref("smallbank-join", SMALLBANK, "SELECT a.custid FROM accounts a JOIN savings s ON s.custid = a.custid "
    "WHERE a.name = 'alice'")
ref("tatp-subscriber", TATP | CAN, "SELECT * FROM subscriber WHERE s_id = 12")
ref("tatp-call-forwarding", TATP | CAN | ALL, "DELETE FROM call_forwarding WHERE s_id = $1 AND sf_type = $2 "
    "AND start_time = $3", ["12", "1", "8"])
ref("no-schema", NONE | ALL, "SELECT * FROM t WHERE a = 1 AND b = 'x' AND c IN (1, 2)")
ref("set-show-ddl", TPCC, "SET search_path TO public; SHOW TimeZone; CREATE TABLE t (a int)")
ref("comments", TPCC | CAN, "/* hi */ SELECT * FROM warehouse -- x\n WHERE w_id = 5")
