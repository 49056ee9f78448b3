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


def write_all(target_dir, seeds):
    """Writes every (name, data) of `seeds` (a dict) as a seed of one target."""
    for name, data in seeds.items():
        write(target_dir, name, data)


def length_prefixed(b):
    """A protocol value: int32 length and bytes, or -1 for NULL (None)."""
    if b is None:
        return struct.pack("!i", -1)
    b = b.encode() if isinstance(b, str) else b
    return struct.pack("!i", len(b)) + b


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
    body += struct.pack("!h", len(params)) + b"".join(length_prefixed(p) for p in params)
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

WIRE_SEEDS = {
    "psql-simple": startup(PSQL) + msg("Q", cstr("SELECT w_tax FROM warehouse WHERE w_id = 5")) + TERM,
    "ssl-then-startup": struct.pack("!ii", 8, 80877103) + startup(PSQL) + msg("Q", cstr("BEGIN")) +
        msg("Q", cstr("COMMIT")) + TERM,
    "gssenc-then-startup": struct.pack("!ii", 8, 80877104) + startup(PSQL) + TERM,
    "cancel": struct.pack("!iiii", 16, 80877102, 4242, 0x1234567),
    "protocol2": startup([("user", "x")], code=0x20000),
    "pgbench-extended": startup([("user", "postgres"), ("database", "bench"), ("application_name", "pgbench")]) +
        parse("", "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2;") +
        bind("", "", ["-1234", "77"]) + describe("P", "") + execute() + SYNC + TERM,
    "pgbench-prepared": startup([("user", "postgres"), ("database", "bench")]) +
        parse("P0_1", "SELECT abalance FROM pgbench_accounts WHERE aid = $1;") + describe("S", "P0_1") + SYNC +
        bind("", "P0_1", ["12"]) + execute() + SYNC + msg("C", b"SP0_1\0") + SYNC + TERM,
    "tpcc-new-order": startup(JDBC) +
        parse("S_1", "UPDATE stock SET s_quantity = $1 WHERE s_i_id = $2 AND s_w_id = $3", (23, 23, 23)) +
        bind("", "S_1", ["17", "2", "5"]) + execute() +
        parse("S_2", "SELECT c_discount, c_last, c_credit FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3") +
        bind("C_3", "S_2", [b"\x00\x00\x00\x05", b"\x00\x00\x00\x03", None], formats=(1,), result_formats=(0, 1, 0)) +
        describe("P", "C_3") + execute("C_3", 10) + SYNC + TERM,
    "sasl": startup([("user", "alice"), ("database", "tpcc")]) +
        msg("p", cstr("SCRAM-SHA-256") + struct.pack("!i", 32) + b"n,,n=,r=rOprNGfwEbeRWgbNEkqO0123") +
        msg("p", b"c=biws,r=rOprNGfwEbeRWgbNEkqO0123srv,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=") +
        msg("Q", cstr("SHOW POOLS")),
    "md5-password": startup([("user", "bob")]) + msg("p", cstr("md5e5b9ecfb32c6c9a1c9e0d5e3a1b2c3d4")),
    "copy-in": startup(PSQL) + msg("Q", cstr("COPY item FROM STDIN")) + msg("d", b"1\t2\tx\n") +
        msg("d", b"\\.\n") + msg("c", b"") + msg("f", cstr("aborted")) + msg("H", b"") + msg("F", b"\0\0\0\x01"),
    "error-fields": startup(PSQL) +
        msg("N", b"SERROR\0VERROR\0C40001\0Mcould not serialize access\0Dfrom the fuzzer\0\0") + SYNC,
    "bad-length": startup(PSQL) + b"Q\x00\x00\x00\x02",
    "huge-length": startup(PSQL) + b"Q\x7f\xff\xff\xff",
    "startup-no-terminator": struct.pack("!ii", 17, 196608) + b"user\0alice\0",
    "bind-negative-counts": startup(PSQL) + msg("B", b"\0\0\xff\xff\xff\xfe\0\0\0\0") + SYNC,
}
write_all(W, WIRE_SEEDS)

# ---------------------------------------------------------------- auth
A = "adapters/proxy/fuzz_corpus/auth_fuzzer"
AUTH_SEEDS = {
    "scram-no-password": b"\x00n,,n=,r=rOprNGfwEbeRWgbNEkqO\0"
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
    "scram-y-header": b"\x00y,,n=alice,r=abc\0c=eSws,r=abc,p=AAAA",
    "scram-channel-binding": b"\x00p=tls-server-end-point,,n=,r=abc\0",
    "scram-right-password": b"\x01fuzz-secret\0\0",
    "scram-wrong-password": b"\x01fuzz-secreT\0\0",
    "scram-extended-first": b"\x01fuzz-secret\0,x=extension\0",
    "scram-edited-final": b"\x01fuzz-secret\0\0\x09Z",
    "scram-edited-proof": b"\x01fuzz-secret\0\0\x50=",
    "scram-hostile-server": b"\x02r=srv,s=QSXCR+Q6sek8bf92,i=4\0v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
    "scram-server-many-iterations": b"\x02r=srv,s=QSXCR+Q6sek8bf92,i=2000000000\0",
    "scram-server-bad-salt": b"\x02r=srv,s=Q,i=4\0v=",
    "md5": b"\x03alice\0secret\0\x01\x02\x03\x04",
    "md5-stored": b"\x03alice\0md5" + b"0" * 32 + b"\0salt",
    "userlist": b"\x04\"alice\" \"secret\"\n; comment\n# comment\n\n\"bob\" \"pa\"\"ss\"\n",
    "userlist-bad": b"\x04\"alice\" secret\n",
    "base64": b"\x05QUJD",
    "base64-padded": b"\x05AAA=",
    "base64-pad-only": b"\x05====",
    "base64-spaces": b"\x05  ==",
}
write_all(A, AUTH_SEEDS)

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

# ---------------------------------------------------------------- pg_params
# Input layout: see policies/pg_params_fuzzer.cc. Byte 0 of a single value is
# the index of its type in the target's kOids table.
P = "policies/fuzz_corpus/pg_params_fuzzer"
OIDS = [16, 19, 20, 21, 23, 25, 26, 1042, 1043, 1082, 1114, 1184, 1700, 2950, 1000, 1003, 1005, 1007, 1009,
        1014, 1015, 1016, 1028, 1115, 1182, 1185, 1231, 2951, 0, 701]
PG_EPOCH_DAYS = 10957  # 2000-01-01 - 1970-01-01


def numeric_bin(s):
    """numeric_send of a decimal string: base-10000 digits, weight, sign, dscale."""
    if s == "NaN":
        return struct.pack("!hhHh", 0, 0, 0xC000, 0)
    sign = 0x4000 if s.startswith("-") else 0
    s = s.lstrip("-")
    ip, _, fp = s.partition(".")
    dscale = len(fp)
    ip = ip.lstrip("0")
    ip = "0" * (-len(ip) % 4) + ip
    fp = fp + "0" * (-len(fp) % 4)
    groups = [int(ip[i:i + 4]) for i in range(0, len(ip), 4)] + [int(fp[i:i + 4]) for i in range(0, len(fp), 4)]
    weight = len(ip) // 4 - 1
    while groups and groups[0] == 0:
        groups.pop(0)
        weight -= 1
    while groups and groups[-1] == 0:
        groups.pop()
    if not groups:
        weight, sign = 0, 0
    return struct.pack("!hhHh", len(groups), weight, sign, dscale) + b"".join(struct.pack("!h", g) for g in groups)


def array_bin(elem_oid, elems, packer):
    has_null = any(e is None for e in elems)
    out = struct.pack("!iiiii", 1, 1 if has_null else 0, elem_oid, len(elems), 1)
    return out + b"".join(length_prefixed(None if e is None else packer(e)) for e in elems)


def value(name, oid, fmt, data):
    write(P, name, bytes([OIDS.index(oid), fmt]) + (data.encode() if isinstance(data, str) else data))


def bind_body(stmt, params, formats=(), result_formats=()):
    return bind("", stmt, params, formats, result_formats)[5:]  # without the type byte and length


i4 = lambda v: struct.pack("!i", v)
i8 = lambda v: struct.pack("!q", v)
uuid_bin = lambda s: bytes.fromhex(s.replace("-", ""))
date_bin = lambda days: struct.pack("!i", days)  # days since 2000-01-01
ts_bin = lambda usec: struct.pack("!q", usec)  # microseconds since 2000-01-01 00:00 UTC
TS = (((2024 - 2000) * 365 + 6 + 30) * 86400 + 13 * 3600 + 45 * 60 + 7) * 10**6 + 250000  # 2024-01-31 13:45:07.25

value("int4-bin", 23, 1, i4(5))
value("int4-bin-negative", 23, 1, i4(-2147483648))
value("int4-text", 23, 0, " 42 ")
value("int2-bin", 21, 1, struct.pack("!h", -12))
value("int8-bin", 20, 1, i8(9223372036854775807))
value("int8-text", 20, 0, "-9000000000")
value("oid-bin", 26, 1, struct.pack("!I", 4294967295))
value("bool-bin", 16, 1, b"\x01")
value("bool-text-yes", 16, 0, "yes")
value("numeric-bin", 1700, 1, numeric_bin("-12.340"))
value("numeric-bin-big", 1700, 1, numeric_bin("123456789012345678.000000001"))
value("numeric-bin-nan", 1700, 1, numeric_bin("NaN"))
value("numeric-bin-zero", 1700, 1, numeric_bin("0.00"))
value("numeric-text", 1700, 0, "5.00")
value("uuid-bin", 2950, 1, uuid_bin("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"))
value("uuid-text-upper", 2950, 0, "A0EEBC999C0B4EF8BB6D6BB9BD380A11")
value("date-bin", 1082, 1, date_bin(8796))  # 2024-01-31
value("date-bin-bc", 1082, 1, date_bin(-744000))
value("date-bin-infinity", 1082, 1, date_bin(2147483647))
value("date-text", 1082, 0, "2024-01-31")
value("timestamp-bin", 1114, 1, ts_bin(TS))
value("timestamptz-bin", 1184, 1, ts_bin(TS))
value("timestamptz-bin-negative", 1184, 1, ts_bin(-TS))
value("timestamptz-text", 1184, 0, "2024-01-31 13:45:07.25+00")
value("bpchar-bin", 1042, 1, "ab   ")
value("text-bin", 25, 1, "O'Brien")
value("varchar-text", 1043, 0, "caf\u00e9")
value("float8-bin-unknown", 701, 1, struct.pack("!d", 1.5))
value("unspecified-bin", 0, 1, i4(7))
value("int4-array-bin", 1007, 1, array_bin(23, [1, 2, None, 4], i4))
value("int4-array-text", 1007, 0, "{1, 2,NULL,4}")
value("int8-array-bin", 1016, 1, array_bin(20, [-1, 2**40], i8))
value("numeric-array-bin", 1231, 1, array_bin(1700, ["1.50", "-0.001", "NaN"], numeric_bin))
value("uuid-array-bin", 2951, 1, array_bin(2950, ["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", None], uuid_bin))
value("date-array-bin", 1182, 1, array_bin(1082, [8796, 0], date_bin))
value("timestamptz-array-bin", 1185, 1, array_bin(1184, [TS, 0], ts_bin))
value("text-array-bin", 1009, 1, array_bin(25, ['a b', 'q"uote', 'back\\slash', None], str.encode))
value("text-array-text", 1009, 0, '[1:3]={"a b","q\\"uote",NULL}')
value("text-array-bin-2d", 1009, 1, struct.pack("!iiiiiii", 2, 0, 25, 1, 1, 1, 1) + struct.pack("!i", 1) + b"x")
value("empty-array-bin", 1007, 1, struct.pack("!iii", 0, 0, 23))
# Whole Bind bodies (byte 1 picks the declared OIDs: OIDS[(byte1 + i) % len]).
write(P, "bind-tpcc-new-order-binary", b"\xff" + bytes([OIDS.index(23)]) +
      bind_body("S_1", [i4(1), i4(4), i4(1234)], formats=[1]))
write(P, "bind-mixed-formats", b"\xff" + bytes([OIDS.index(20)]) +
      bind_body("S_2", [i8(7), "5", None], formats=[1, 0, 1], result_formats=[1]))
write(P, "bind-text-all", b"\xff" + bytes([OIDS.index(1700)]) + bind_body("", ["5.00", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"]))
write(P, "bind-arrays", b"\xff" + bytes([OIDS.index(1007)]) +
      bind_body("S_3", [array_bin(23, [1, 2], i4), "{a,b}"], formats=[1, 0]))
write(P, "bind-bad-format-count", b"\xff\x00" + bind_body("", [i4(1), i4(2), i4(3)], formats=[1, 1]))
write(P, "bind-bad-format-code", b"\xff\x00" + bind_body("", [i4(1)], formats=[2]))
write(P, "paramdesc", b"\xfe" + struct.pack("!hiii", 3, 23, 20, 1700))
write(P, "paramdesc-empty", b"\xfe" + struct.pack("!h", 0))
