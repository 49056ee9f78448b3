// The hot-row transaction of bench/proxy/hot_row.sql driven by the
// PostgreSQL JDBC driver (bench/proxy/run.sh, workload hot-row-jdbc): N
// terminals, each its own connection, for a fixed time run
//   BEGIN ISOLATION LEVEL SERIALIZABLE;
//   SELECT abalance FROM pgbench_accounts WHERE aid = ?;
//   UPDATE pgbench_accounts SET abalance = abalance + ? WHERE aid = ?;
//   COMMIT;
// with aid uniform in 1..ROWS, through reused PreparedStatements with
// setInt (pgjdbc sends int4 parameters in binary; with its default
// prepareThreshold=5 they become named server-side statements). A
// transaction that fails with 40001/40P01 is rolled back and retried with
// the same values, up to MAX_TRIES tries (then it counts as failed).
// BEGIN ISOLATION LEVEL is a statement of each transaction because
// setTransactionIsolation's session-level SET does not follow a client
// through a transaction pool (issue 26, item 0).
//
//   java -cp /usr/share/java/postgresql.jar HotRowJdbc.java \
//       HOST PORT USER DBNAME CLIENTS SECONDS ROWS MAX_TRIES [PREPARE_THRESHOLD|default]
//
// PGSSLMODE, when set, is pgjdbc's sslmode (asyncpg's client reads it too).
//
// Prints one line, like pgbench's figures:
//   driver=jdbc prepare_threshold=default clients=16 duration=10.00 committed=N tps=X retries=R retried=T failed=F
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

public class HotRowJdbc {
  static final AtomicLong committed = new AtomicLong(), retries = new AtomicLong(), retried = new AtomicLong(),
      failed = new AtomicLong();
  static volatile String fatal = null;

  static boolean retryable(SQLException e) {
    return "40001".equals(e.getSQLState()) || "40P01".equals(e.getSQLState());
  }

  public static void main(String[] args) throws Exception {
    final String url = "jdbc:postgresql://" + args[0] + ":" + args[1] + "/" + args[3];
    final int clients = Integer.parseInt(args[4]);
    final double seconds = Double.parseDouble(args[5]);
    final int rows = Integer.parseInt(args[6]), maxTries = Integer.parseInt(args[7]);
    final String threshold = args.length > 8 ? args[8] : "default";
    final Properties props = new Properties();
    props.setProperty("user", args[2]);
    props.setProperty("connectTimeout", "30");
    if (!threshold.equals("default")) props.setProperty("prepareThreshold", threshold);
    final String sslmode = System.getenv("PGSSLMODE");  // as libpq: run.sh's TLS=1 sets require
    if (sslmode != null && !sslmode.isEmpty()) props.setProperty("sslmode", sslmode);
    final List<Connection> conns = new ArrayList<>();
    for (int i = 0; i < clients; i++) conns.add(DriverManager.getConnection(url, props));
    final long start = System.nanoTime();
    final long end = start + (long) (seconds * 1e9);
    List<Thread> ts = new ArrayList<>();
    for (Connection c : conns) {
      ts.add(new Thread(() -> {
        try (Statement st = c.createStatement();
             PreparedStatement sel = c.prepareStatement("SELECT abalance FROM pgbench_accounts WHERE aid = ?");
             PreparedStatement up =
                 c.prepareStatement("UPDATE pgbench_accounts SET abalance = abalance + ? WHERE aid = ?")) {
          ThreadLocalRandom rnd = ThreadLocalRandom.current();
          while (System.nanoTime() < end) {
            final int aid = 1 + rnd.nextInt(rows), delta = rnd.nextInt(-100, 101);
            for (int attempt = 1;; attempt++) {
              try {
                st.execute("BEGIN ISOLATION LEVEL SERIALIZABLE");
                sel.setInt(1, aid);
                try (ResultSet rs = sel.executeQuery()) {
                  rs.next();
                }
                up.setInt(1, delta);
                up.setInt(2, aid);
                up.executeUpdate();
                st.execute("COMMIT");
                committed.incrementAndGet();
                if (attempt > 1) retried.incrementAndGet();
                break;
              } catch (SQLException e) {
                st.execute("ROLLBACK");
                if (!retryable(e) || attempt >= maxTries || System.nanoTime() >= end) {
                  failed.incrementAndGet();
                  if (!retryable(e) && fatal == null) fatal = e.getSQLState() + " " + e.getMessage();
                  break;
                }
                retries.incrementAndGet();
              }
            }
          }
        } catch (SQLException e) {
          if (fatal == null) fatal = e.getSQLState() + " " + e.getMessage();
        }
      }));
    }
    for (Thread t : ts) t.start();
    for (Thread t : ts) t.join();
    final double elapsed = (System.nanoTime() - start) / 1e9;
    for (Connection c : conns) c.close();
    if (fatal != null) System.err.println("hot_row_jdbc: error: " + fatal);
    System.out.printf("driver=jdbc prepare_threshold=%s clients=%d duration=%.2f committed=%d tps=%.1f retries=%d "
            + "retried=%d failed=%d%n", threshold, clients, elapsed, committed.get(), committed.get() / elapsed,
        retries.get(), retried.get(), failed.get());
  }
}
