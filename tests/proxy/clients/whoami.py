"""Prints "<current_user> <current_database>" of one connection through the
proxy, with psycopg 3 or asyncpg (argv: driver host port user password
dbname); exits 2 with the driver's error on a refused login (its SQLSTATE
first when the driver gives one).
"""
import sys


def main():
    driver, host, port, user, password, dbname = sys.argv[1:7]
    sql = "SELECT current_user, current_database()"
    try:
        if driver == "psycopg":
            import psycopg
            with psycopg.connect(host=host, port=port, user=user, password=password, dbname=dbname,
                                 sslmode="disable", connect_timeout=10) as conn:
                row = conn.execute(sql).fetchone()
        else:
            import asyncio
            import asyncpg

            async def run():
                conn = await asyncpg.connect(host=host, port=int(port), user=user, password=password,
                                             database=dbname, ssl=False, timeout=10)
                try:
                    return await conn.fetchrow(sql)
                finally:
                    await conn.close()
            row = asyncio.run(run())
    except Exception as e:  # the test reads the SQLSTATE
        state = getattr(e, "sqlstate", None) or getattr(e, "pgcode", None) or ""
        print("refused %s %s" % (state, str(e).splitlines()[0] if str(e) else type(e).__name__))
        sys.exit(2)
    print("%s %s" % (row[0], row[1]))


if __name__ == "__main__":
    main()
