// pgjdbc through `corral proxy` with replay on (tests/proxy/replay_extended_test.cc):
// a real 40001 in a SERIALIZABLE transaction of blind writes, as in
// replay_asyncpg.py. pgjdbc sends BEGIN in the same Parse/Bind/Execute unit as
// the first statement, and named server statements after prepareThreshold
// executions (the test runs the transaction with and without them).
//   java -cp /usr/share/java/postgresql.jar ReplayJdbc.java PORT SERVER_PORT TABLE ROW_A ROW_B WARM
//   -> "blind: 1 1 committed" when the client never sees the conflict.
// With a 7th argument `auto`: b runs with autoCommit=true (an implicit
// transaction per statement: one Parse/Bind/Describe/Execute/Sync unit) and
// default_transaction_isolation = serializable; only its UPDATE of ROW_B,
// which waits for a's -> "auto: 1" when the client never sees the conflict.
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.concurrent.CompletableFuture;

public class ReplayJdbc {
  static Connection open(int port, boolean auto) throws SQLException {
    Connection c = DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + port + "/postgres?user=postgres");
    if (auto) {
      c.setAutoCommit(true);
      c.createStatement().execute("SET default_transaction_isolation = 'serializable'");
    } else {
      c.setTransactionIsolation(Connection.TRANSACTION_SERIALIZABLE);
      c.setAutoCommit(false);
    }
    return c;
  }

  public static void main(String[] args) throws Exception {
    int port = Integer.parseInt(args[0]);
    int serverPort = Integer.parseInt(args[1]);
    String table = args[2];
    int rowA = Integer.parseInt(args[3]);
    int rowB = Integer.parseInt(args[4]);
    int warm = Integer.parseInt(args[5]);  // executions first: past prepareThreshold, named statements
    boolean auto = args.length > 6 && args[6].equals("auto");
    String upd = "UPDATE " + table + " SET v = v + 1 WHERE k = ?";
    try (Connection direct = DriverManager.getConnection(
             "jdbc:postgresql://127.0.0.1:" + serverPort + "/postgres?user=postgres");
         Connection a = open(port, false);
         Connection b = open(port, auto)) {
      direct.setAutoCommit(true);
      PreparedStatement ua = a.prepareStatement(upd);
      PreparedStatement ub = b.prepareStatement(upd);
      for (int i = 0; i < warm; i++) {
        ua.setInt(1, 0);
        ua.executeUpdate();
        a.commit();
        ub.setInt(1, 0);
        ub.executeUpdate();
        if (!auto) b.commit();
      }
      ua.setInt(1, rowB);
      if (ua.executeUpdate() != 1) throw new AssertionError("a's update");
      int first = 0;
      if (!auto) {
        ub.setInt(1, rowA);
        first = ub.executeUpdate();
      }
      CompletableFuture<Integer> second = CompletableFuture.supplyAsync(() -> {
        try {
          ub.setInt(1, rowB);
          return ub.executeUpdate();
        } catch (SQLException e) {
          throw new RuntimeException(e.getSQLState() + " " + e.getMessage());
        }
      });
      PreparedStatement locks = direct.prepareStatement(
          "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE NOT l.granted AND a.query LIKE ?");
      locks.setString(1, "%" + table + "%");
      for (int i = 0; i < 500; i++) {
        try (ResultSet r = locks.executeQuery()) {
          r.next();
          if (r.getInt(1) > 0) break;
        }
        Thread.sleep(20);
      }
      a.commit();
      int got;
      try {
        got = second.get();
      } catch (Exception e) {
        System.out.println("FAIL: blind writes got " + e.getMessage());
        System.exit(1);
        return;
      }
      if (auto) {
        System.out.println("auto: " + got);
        return;
      }
      b.commit();
      System.out.println("blind: " + first + " " + got + " committed");
    }
  }
}
