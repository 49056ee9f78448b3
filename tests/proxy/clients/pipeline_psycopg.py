"""psycopg 3 pipeline mode through `corral proxy` (tests/proxy/pipeline_test.cc).
Client b's SERIALIZABLE transaction sends several statements with
`conn.pipeline()` before reading any result: one Sync for the whole pipeline,
or a Sync after each statement (`Pipeline.sync()`: several in flight).
Usage: pipeline_psycopg.py PORT SERVER_PORT TABLE MODE ROW_A ROW_B
  MODE values: no conflict; one pipeline with one Sync, then one with a Sync
               per statement (UPDATE .. RETURNING, SELECT, a two-row UPDATE);
               every value and row count read back is checked, then the
               table -> prints "values: ok".
  MODE blind:  b's UPDATEs of ROW_A, ROW_B (client a updated it and has not
               committed: b waits) and ROW_A + 1 in one pipeline (one Sync);
               a commits, the server fails b's second UPDATE with 40001 ->
               prints "blind: 1 1 1 committed" when b never sees the error,
               "blind: 40001" when it does (then rolled back).
  MODE syncs:  as blind, `Pipeline.sync()` after each UPDATE (psycopg 3.1
               reads each Sync's results before it goes on: one unit in
               flight at a time) -> "syncs: 1 1 1 committed" or "syncs: 40001".
  MODE many:   as blind, the three UPDATEs as one `executemany` (psycopg
               pipelines it: a named statement, Bind/Execute per row, one
               Sync) -> "many: 3 committed" (the rows it updated) or
               "many: 40001".
  MODE libpq:  as blind through libpq's own pipeline mode (psycopg.pq, as
               pgbench --pipeline or any libpq client): a Sync after each
               UPDATE, all three sent before any result is read (several
               Syncs in flight) -> "libpq: 1 1 1 committed" or
               "libpq: 40001 25P02" (the third unit ran in the failed
               transaction, as PostgreSQL answers it).
  MODE libpqread: as libpq, b first reads ROW_B (0) -> "libpqread: 40001 25P02"
               (the re-read would differ).
  MODE libpqcommitlast: as libpq with a COMMIT unit last (in flight too) ->
               "libpqcommitlast: 40001 25P02 ROLLBACK" (the COMMIT of the
               failed block rolls back).
  MODE libpqcommit: write skew (a reads ROW_A, b reads ROW_B, a updates
               ROW_B, b updates ROW_A, a commits); b's libpq pipeline sends
               COMMIT and, behind it, an UPDATE of ROW_A + 1, each with its
               Sync: the COMMIT fails with 40001 and ends the transaction,
               the UPDATE runs after it on its own (autocommit) ->
               "libpqcommit: 40001 1" (its count), ROW_A + 1 updated once.
  MODE libpqlast: as libpq, the UPDATE of ROW_B last (nothing in flight
               behind the failed unit) -> "libpqlast: 1 1 1 committed" or
               "libpqlast: 40001".
  MODE auto:   as blind with autocommit and default_transaction_isolation
               serializable: the pipeline is one implicit transaction
               -> "auto: 1 1 1 committed" or "auto: 40001".
  MODE returning: as many with `executemany(..., returning=True)` of
               UPDATE .. RETURNING v (psycopg sends a Flush, reads each row's
               result) -> "returning: 1 2 1 committed" (ROW_B's v after a's
               update and b's) or "returning: 40001".
  MODE read:   b reads ROW_B (0), then updates it in the pipeline, one Sync
               -> "read: 40001" (the re-read would differ).
  After a 40001 the same connection runs one more transaction (ROW_A + 2:
  "after: 1") and the rows are checked against what the client believes
  committed (each exactly once).
Exits non-zero on any other outcome."""
import sys
import threading
import time

import psycopg
from psycopg import errors, pq


def wait_for_lock(direct, table):
    """Until a session waits for a lock on `table` (b on a's row)."""
    for _ in range(500):
        n = direct.execute("SELECT count(*) FROM pg_locks l JOIN pg_stat_activity s USING (pid) "
                           "WHERE NOT l.granted AND s.query LIKE %s", ("%" + table + "%",)).fetchone()[0]
        if n > 0:
            return
        time.sleep(0.02)
    raise RuntimeError("b never waited for a's row lock")


def behind(a, direct, table, work, key, timeout=60):
    """Runs work() (b's transaction, which writes into out[key] what it got)
    in a thread, waits until b waits on a's row lock, commits a, and joins;
    a 40001 or any other exception of work() becomes out[key]. Returns out,
    or fails when b still hangs after `timeout` seconds."""
    out = {}

    def run():
        try:
            work(out)
        except errors.SerializationFailure:
            out[key] = "40001"
        except Exception as e:  # noqa: BLE001
            out[key] = "other: %r" % e

    t = threading.Thread(target=run)
    t.start()
    wait_for_lock(direct, table)
    a.commit()
    t.join(timeout)
    if t.is_alive():
        fail("b hangs")
    return out


def fail(*what):
    print("FAIL:", *what)
    sys.exit(1)


def values(b, direct, table, row_a, row_b):
    upd_ret = f"UPDATE {table} SET v = v + 1 WHERE k = %s RETURNING v"
    sel = f"SELECT v FROM {table} WHERE k = %s"
    upd2 = f"UPDATE {table} SET v = v + 10 WHERE k = ANY(%s)"
    for syncs in (False, True):
        with b.pipeline() as p:
            c1 = b.execute(upd_ret, (row_a,))
            if syncs:
                p.sync()
            c2 = b.execute(sel, (row_a,))
            if syncs:
                p.sync()
            c3 = b.execute(upd2, ([row_b, row_b + 1],))
            if syncs:
                p.sync()
            c4 = b.execute(sel, (row_b + 1,))
        want = 1 if not syncs else 2
        got = (c1.fetchone()[0], c2.fetchone()[0], c3.rowcount, c4.fetchone()[0])
        if got != (want, want, 2, 10 * want):
            fail("pipeline (syncs=%s) read" % syncs, got)
        b.commit()
    for k, v in ((row_a, 2), (row_b, 20), (row_b + 1, 20)):
        got = direct.execute(f"SELECT v FROM {table} WHERE k = %s", (k,)).fetchone()[0]
        if got != v:
            fail("row", k, "is", got, "not", v)
    print("values: ok")
    return 0


def conflict(port, b, direct, table, mode, row_a, row_b):
    a = psycopg.connect(f"host=127.0.0.1 port={port} user=postgres dbname=postgres")
    a.isolation_level = psycopg.IsolationLevel.SERIALIZABLE
    upd = f"UPDATE {table} SET v = v + 1 WHERE k = %s"
    sel = f"SELECT v FROM {table} WHERE k = %s"
    if a.execute(upd, (row_b,)).rowcount != 1:
        fail("a's update")
    if mode == "read":
        if b.execute(sel, (row_b,)).fetchone()[0] != 0:
            fail("b's read")

    def work(out):
        if mode == "libpq":
            return libpq_pipeline(port, table, (row_a, row_b, row_a + 1), out)
        if mode == "libpqlast":
            return libpq_pipeline(port, table, (row_a, row_a + 1, row_b), out)
        if mode == "libpqcommitlast":
            return libpq_pipeline(port, table, (row_a, row_b, row_a + 1), out, commit=True)
        if mode == "libpqread":
            return libpq_pipeline(port, table, (row_a, row_b, row_a + 1), out, read=row_b)
        if mode == "returning":
            cur = b.cursor()
            cur.executemany(upd + " RETURNING v", [(row_a,), (row_b,), (row_a + 1,)], returning=True)
            got = []
            while True:
                got.append(cur.fetchone()[0])
                if not cur.nextset():
                    break
            out["counts"] = got
            b.commit()
            return
        if mode == "many":
            cur = b.cursor()
            cur.executemany(upd, [(row_a,), (row_b,), (row_a + 1,)])
            out["counts"] = [cur.rowcount]
            b.commit()
            return
        with b.pipeline() as p:
            cs = []
            for k in ((row_b,) if mode == "read" else (row_a, row_b, row_a + 1)):
                cs.append(b.execute(upd, (k,)))
                if mode == "syncs":
                    p.sync()
        out["counts"] = [c.rowcount for c in cs]
        b.commit()

    out = behind(a, direct, table, work, "error")
    a.close()
    if "error" in out:
        want_error = {"libpq": "40001 25P02", "libpqread": "40001 25P02", "libpqcommitlast": "40001 25P02 ROLLBACK"}
        if out["error"] != want_error.get(mode, "40001"):
            fail(out["error"])
        b.rollback()
        print(f"{mode}: {out['error']}")
        # The connection goes on: a new transaction, committed.
        with b.pipeline():
            c = b.execute(upd + " RETURNING v", (row_a + 2,))
        print("after:", c.fetchone()[0])
        b.commit()
        want = {row_a: 0, row_b: 1, row_a + 1: 0, row_a + 2: 1}
    else:
        if mode in ("read", "libpqread"):
            fail("the read transaction went on")
        print(f"{mode}: {' '.join(map(str, out['counts']))} committed")
        want = {row_a: 1, row_b: 2, row_a + 1: 1, row_a + 2: 0}
    for k, v in want.items():
        got = direct.execute(sel, (k,)).fetchone()[0]
        if got != v:
            fail("row", k, "is", got, "not", v)
    # Nothing left behind: no lock of b's, no transaction open on the server
    # but the direct connection's own.
    n = direct.execute("SELECT count(*) FROM pg_locks l JOIN pg_stat_activity s USING (pid) "
                       "WHERE s.pid <> pg_backend_pid() AND l.relation = %s::regclass", (table,)).fetchone()[0]
    if n != 0:
        fail(n, "locks left on the table")
    return 0


def libpq_pipeline(port, table, rows, out, read=None, commit=False):
    """libpq pipeline mode: BEGIN (and a read of row `read`, which must be
    0), then one UPDATE per unit, each with its Sync, and with `commit` a
    COMMIT unit, all sent before reading; then COMMIT (or, after an error,
    ROLLBACK). out["counts"]: each unit's row count (and the COMMIT's tag);
    after an error out["error"]: what the units after the first answered
    (SQLSTATEs, the COMMIT's tag)."""
    pg = pq.PGconn.connect(f"host=127.0.0.1 port={port} user=postgres dbname=postgres".encode())
    if pg.status != pq.ConnStatus.OK:
        out["error"] = "connect: %r" % pg.error_message
        return
    try:
        if pg.exec_(b"BEGIN ISOLATION LEVEL SERIALIZABLE").status != pq.ExecStatus.COMMAND_OK:
            out["error"] = "BEGIN failed"
            return
        if read is not None:
            r = pg.exec_params(f"SELECT v FROM {table} WHERE k = $1".encode(), [str(read).encode()])
            if r.status != pq.ExecStatus.TUPLES_OK or r.get_value(0, 0) != b"0":
                out["error"] = "read failed"
                return
        pg.enter_pipeline_mode()
        for k in rows:
            pg.send_query_params(f"UPDATE {table} SET v = v + 1 WHERE k = $1".encode(), [str(k).encode()])
            pg.pipeline_sync()
        if commit:
            pg.send_query_params(b"COMMIT", None)
            pg.pipeline_sync()
        got, errs = [], []
        for _ in range(len(rows) + commit):
            r = pg.get_result()
            if r.status == pq.ExecStatus.COMMAND_OK:
                got.append(str(r.command_tuples) if r.command_tuples is not None else r.command_status.decode())
            elif r.status == pq.ExecStatus.FATAL_ERROR:
                got.append(r.error_field(pq.DiagnosticField.SQLSTATE).decode())
                errs.append(got[-1])
            else:
                errs.append("status %s" % r.status)
            if pg.get_result() is not None:
                errs.append("no end of results")
            s = pg.get_result()
            if s is None or s.status != pq.ExecStatus.PIPELINE_SYNC:
                errs.append("no Sync result")
        pg.exit_pipeline_mode()
        end = pg.exec_(b"ROLLBACK" if errs or commit else b"COMMIT")
        if end.status != pq.ExecStatus.COMMAND_OK:
            errs.append("end failed")
        # The session goes on: one more statement on it.
        if pg.exec_(b"SELECT 1").get_value(0, 0) != b"1":
            errs.append("session lost")
        if errs:
            # What came after the first error (and 1s before it only).
            first = next(i for i, g in enumerate(got) if g == errs[0]) if errs[0] in got else len(got)
            out["error"] = " ".join(got[first:]) if errs[0] in got else " ".join(errs)
            if any(g != "1" for g in got[:first]):
                out["error"] += " before: %s" % got[:first]
        else:
            out["counts"] = got
    finally:
        pg.finish()


def commit_behind(port, direct, table, row_a, row_b):
    a = psycopg.connect(f"host=127.0.0.1 port={port} user=postgres dbname=postgres")
    a.isolation_level = psycopg.IsolationLevel.SERIALIZABLE
    pg = pq.PGconn.connect(f"host=127.0.0.1 port={port} user=postgres dbname=postgres".encode())
    sel = f"SELECT v FROM {table} WHERE k = $1".encode()
    upd = f"UPDATE {table} SET v = v + 1 WHERE k = $1".encode()
    if a.execute(f"SELECT v FROM {table} WHERE k = %s", (row_a,)).fetchone()[0] != 0:
        fail("a's read")
    if pg.exec_(b"BEGIN ISOLATION LEVEL SERIALIZABLE").status != pq.ExecStatus.COMMAND_OK:
        fail("b's BEGIN")
    if pg.exec_params(sel, [str(row_b).encode()]).get_value(0, 0) != b"0":
        fail("b's read")
    a.execute(f"UPDATE {table} SET v = v + 1 WHERE k = %s", (row_b,))
    if pg.exec_params(upd, [str(row_a).encode()]).command_tuples != 1:
        fail("b's update")
    a.commit()
    pg.enter_pipeline_mode()
    pg.send_query_params(b"COMMIT", None)
    pg.pipeline_sync()
    pg.send_query_params(upd, [str(row_a + 1).encode()])
    pg.pipeline_sync()
    got = []
    for _ in range(2):
        r = pg.get_result()
        if r.status == pq.ExecStatus.FATAL_ERROR:
            got.append(r.error_field(pq.DiagnosticField.SQLSTATE).decode())
        else:
            got.append(str(r.command_tuples if r.command_tuples is not None else r.status))
        if pg.get_result() is not None:
            fail("no end of results")
        s = pg.get_result()
        if s is None or s.status != pq.ExecStatus.PIPELINE_SYNC:
            fail("no Sync result")
    pg.exit_pipeline_mode()
    if pg.exec_(b"SELECT 1").get_value(0, 0) != b"1":
        fail("session lost")
    pg.finish()
    a.close()
    print("libpqcommit:", " ".join(got))
    for k, v in ((row_a, 0), (row_b, 1), (row_a + 1, 1)):
        n = direct.execute(f"SELECT v FROM {table} WHERE k = %s", (k,)).fetchone()[0]
        if n != v:
            fail("row", k, "is", n, "not", v)
    return 0


def main(port, server_port, table, mode, row_a, row_b):
    direct = psycopg.connect(f"host=127.0.0.1 port={server_port} user=postgres dbname=postgres", autocommit=True)
    b = psycopg.connect(f"host=127.0.0.1 port={port} user=postgres dbname=postgres", autocommit=mode == "auto")
    if mode == "auto":
        b.execute("SET default_transaction_isolation = 'serializable'")
    else:
        b.isolation_level = psycopg.IsolationLevel.SERIALIZABLE
    if mode == "values":
        return values(b, direct, table, row_a, row_b)
    if mode == "libpqcommit":
        return commit_behind(port, direct, table, row_a, row_b)
    return conflict(port, b, direct, table, mode, row_a, row_b)


if __name__ == "__main__":  # (replay_psycopg.py imports wait_for_lock)
    sys.exit(main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])))
