"""psycopg 3 through `corral proxy` with binary parameters (%b: typed OIDs in
Parse, values in binary), each beside the same predicate as a text literal.
Usage: psycopg_binary.py PORT (table bw_psy(pk int, v int, pn numeric,
pb bigint, pt text, pu uuid, pd date, pts timestamptz)). Prints one line per
check; the test then expects each reference once, with two commits."""
import datetime
import decimal
import os
import sys
import uuid

import psycopg

# The database (the test makes one per process: CORRAL_TEST_DB).
DB = os.environ.get("CORRAL_TEST_DB", "postgres")

UPD = "UPDATE bw_psy SET v = v + 1 WHERE "
CASES = [  # (column predicate with %b, binary value, the same as a text literal)
    ("pk = %b", 5, "pk = 5"),
    ("pn = %b", decimal.Decimal("5.00"), "pn = 5"),
    ("pb = %b", 7, "pb = 7"),
    ("pt = %b", "t3", "pt = 't3'"),
    ("pu = %b", uuid.UUID("12345678-9ABC-DEF0-1234-56789ABCDEF0"), "pu = '12345678-9abc-def0-1234-56789abcdef0'"),
    ("pd = %b", datetime.date(2024, 1, 31), "pd = '2024-01-31'"),
    ("pts = %b", datetime.datetime(2024, 1, 31, 13, 45, 7, 250000, tzinfo=datetime.timezone.utc),
     "pts = '2024-01-31 13:45:07.25+00'"),
    ("pk = ANY(%b)", [1, 2], "pk IN (1, 2)"),
]

with psycopg.connect(f"host=127.0.0.1 port={sys.argv[1]} user=postgres dbname={DB}", autocommit=True) as c:
    cur = c.cursor()
    for pred, value, text in CASES:
        cur.execute(UPD + pred, (value,))
        cur.execute(UPD + text)
        print(f"binary {pred} {value!r} and text {text}")
