// pgjdbc with autoCommit=true through `corral proxy` with replay on
// (tests/proxy/replay_implicit_test.cc): a real 40001 in an implicit
// transaction. Client a's SERIALIZABLE transaction updates ROW and stays
// open; client b (autocommit, default_transaction_isolation = serializable)
// runs the UPDATE of ROW as one Parse/Bind/Describe/Execute/Sync unit, which
// waits for a's row lock; a commits and the server fails b's UPDATE.
// WARM executions first: past pgjdbc's prepareThreshold, named statements.
//   java -cp /usr/share/java/postgresql.jar ReplayImplicitJdbc.java PORT SERVER_PORT TABLE ROW WARM
//   -> "auto: 1" when the client never sees the conflict.
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.concurrent.CompletableFuture;

public class ReplayImplicitJdbc {
  public static void main(String[] args) throws Exception {
    int port = Integer.parseInt(args[0]);
    int serverPort = Integer.parseInt(args[1]);
    String table = args[2];
    int row = Integer.parseInt(args[3]);
    int warm = Integer.parseInt(args[4]);
    String url = "jdbc:postgresql://127.0.0.1:" + port + "/postgres?user=postgres";
    String upd = "UPDATE " + table + " SET v = v + 1 WHERE k = ?";
    try (Connection direct = DriverManager.getConnection(
             "jdbc:postgresql://127.0.0.1:" + serverPort + "/postgres?user=postgres");
         Connection a = DriverManager.getConnection(url);
         Connection b = DriverManager.getConnection(url)) {
      a.setTransactionIsolation(Connection.TRANSACTION_SERIALIZABLE);
      a.setAutoCommit(false);
      b.setAutoCommit(true);
      b.createStatement().execute("SET default_transaction_isolation = 'serializable'");
      PreparedStatement ub = b.prepareStatement(upd);
      for (int i = 0; i < warm; i++) {
        ub.setInt(1, 0);
        ub.executeUpdate();
      }
      PreparedStatement ua = a.prepareStatement(upd);
      ua.setInt(1, row);
      if (ua.executeUpdate() != 1) throw new AssertionError("a's update");
      CompletableFuture<Integer> second = CompletableFuture.supplyAsync(() -> {
        try {
          ub.setInt(1, row);
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
        System.out.println("FAIL: the autocommit statement got " + e.getMessage());
        System.exit(1);
        return;
      }
      System.out.println("auto: " + got);
    }
  }
}
