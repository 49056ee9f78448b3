"""Reads through the proxy that it should pass unscheduled (free_reads), and
work it should route, with psycopg 3 or asyncpg (argv: driver port dbname
table). Prints one line per step with the values read, so the test can
check the answers as well as the proxy's counters:
  autocommit <v1> <v2> <v3>     three autocommit SELECTs with a parameter
  readonly <v1> <v2> <v3>       three READ ONLY transactions of one SELECT
  write <v>                     one read-write transaction that updates k = 9
"""
import sys


def main():
    driver, port, dbname, table = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    sel = f"SELECT v FROM {table} WHERE k = "
    upd = f"UPDATE {table} SET v = v + 1 WHERE k = 9 RETURNING v"
    if driver == "psycopg":
        import psycopg
        with psycopg.connect(host="127.0.0.1", port=port, user="postgres", dbname=dbname,
                             autocommit=True) as c:
            print("autocommit", *[c.execute(sel + "%s", (k,), binary=True).fetchone()[0] for k in (1, 2, 3)])
        with psycopg.connect(host="127.0.0.1", port=port, user="postgres", dbname=dbname) as c:
            c.read_only = True
            vals = []
            for k in (4, 5, 6):
                vals.append(c.execute(sel + "%s", (k,)).fetchone()[0])
                c.commit()
            print("readonly", *vals)
            c.read_only = False
            print("write", c.execute(upd).fetchone()[0])
            c.commit()
    else:
        import asyncio
        import asyncpg

        async def run():
            c = await asyncpg.connect(host="127.0.0.1", port=port, user="postgres", database=dbname,
                                      statement_cache_size=0)
            try:
                print("autocommit", *[await c.fetchval(sel + "$1", k) for k in (1, 2, 3)])
                vals = []
                for k in (4, 5, 6):
                    async with c.transaction(readonly=True):
                        vals.append(await c.fetchval(sel + "$1", k))
                print("readonly", *vals)
                async with c.transaction():
                    print("write", await c.fetchval(upd))
            finally:
                await c.close()
        asyncio.run(run())


if __name__ == "__main__":
    main()
