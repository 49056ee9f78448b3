// pgjdbc batches through `corral proxy` (tests/proxy/pipeline_test.cc):
// PreparedStatement.addBatch()/executeBatch() pipelines Bind/Execute pairs
// (with BEGIN in the first statement's unit) and sends one Sync per chunk
// (pgjdbc syncs and reads back a chunk when its replies could fill the
// socket buffers: a batch of 600 UPDATEs is three units of at most
// 256, one at a time);
// reWriteBatchedInserts=true turns an INSERT batch into multi-row INSERTs.
//   java -cp /usr/share/java/postgresql.jar PipelineJdbc.java PORT SERVER_PORT TABLE MODE ROW_A ROW_B
// MODE values: no conflict, SERIALIZABLE: a batch of 3 UPDATEs (one of a
//   missing row: count 0), a batch of 600 (several chunks), a rewritten
//   INSERT batch of 5 new rows; every update count and the rows are checked
//   -> "values: ok".
// MODE blind: client a updates ROW_B and stays open; b's batch of UPDATEs of
//   ROW_A, ROW_B (waits for a) and ROW_A + 1; a commits, the server fails
//   b's second UPDATE with 40001 -> "blind: 1 1 1 committed" when b never sees
//   it, "blind: 40001" when it does (rolled back).
// MODE rewrite: as blind with reWriteBatchedInserts=true and an upsert
//   (INSERT .. ON CONFLICT (k) DO UPDATE SET v = v + 1) of the same rows:
//   pgjdbc sends a two-row and a one-row INSERT -> "rewrite: -2 -2 1 committed"
//   or "rewrite: 40001".
// MODE bigblind: as blind with a batch of 600: ROW_A + 1 400 times, ROW_B,
//   ROW_A + 1 199 times (the conflict in pgjdbc's second unit) -> "bigblind:
//   600 committed" (the statements that updated a row) or "bigblind: 40001".
// After a 40001 the same connection commits one more transaction (ROW_A + 2)
// and each row is checked against what b believes committed.
import java.sql.BatchUpdateException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;

public class PipelineJdbc {
  static Connection open(int port, boolean rewrite) throws SQLException {
    Connection c = DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + port
        + "/postgres?user=postgres" + (rewrite ? "&reWriteBatchedInserts=true" : ""));
    c.setTransactionIsolation(Connection.TRANSACTION_SERIALIZABLE);
    c.setAutoCommit(false);
    return c;
  }

  static void fail(String what) {
    System.out.println("FAIL: " + what);
    System.exit(1);
  }

  static int value(Connection direct, String table, int k) throws SQLException {
    try (PreparedStatement s = direct.prepareStatement("SELECT v FROM " + table + " WHERE k = ?")) {
      s.setInt(1, k);
      try (ResultSet r = s.executeQuery()) {
        return r.next() ? r.getInt(1) : -1;
      }
    }
  }

  static void expect(Connection direct, String table, int k, int v) throws SQLException {
    int got = value(direct, table, k);
    if (got != v) fail("row " + k + " is " + got + ", not " + v);
  }

  static int[] batch(PreparedStatement s, int... rows) throws SQLException {
    for (int k : rows) {
      s.setInt(1, k);
      s.addBatch();
    }
    return s.executeBatch();
  }

  static void values(int port, Connection direct, String table, int rowA, int rowB) throws SQLException {
    try (Connection b = open(port, false); Connection w = open(port, true)) {
      PreparedStatement upd = b.prepareStatement("UPDATE " + table + " SET v = v + 1 WHERE k = ?");
      int[] n = batch(upd, rowA, 1000000, rowB);
      if (!Arrays.equals(n, new int[] {1, 0, 1})) fail("batch counts " + Arrays.toString(n));
      // 600 statements: pgjdbc syncs and reads back in chunks.
      int[] many = new int[600];
      for (int i = 0; i < many.length; i++) many[i] = i % 2 == 0 ? rowA : rowB;
      n = batch(upd, many);
      for (int x : n) {
        if (x != 1) fail("large batch count " + x);
      }
      if (n.length != 600) fail("large batch length " + n.length);
      b.commit();
      PreparedStatement ins = w.prepareStatement("INSERT INTO " + table + " (k, v) VALUES (?, 7)");
      n = batch(ins, 1001, 1002, 1003, 1004, 1005);
      for (int x : n) {
        if (x != 1 && x != PreparedStatement.SUCCESS_NO_INFO) fail("rewritten batch count " + x);
      }
      w.commit();
    }
    expect(direct, table, rowA, 301);
    expect(direct, table, rowB, 301);
    for (int k = 1001; k <= 1005; k++) expect(direct, table, k, 7);
    try (PreparedStatement s = direct.prepareStatement("DELETE FROM " + table + " WHERE k > 1000")) {
      if (s.executeUpdate() != 5) fail("inserted rows");
    }
    System.out.println("values: ok");
  }

  public static void main(String[] args) throws Exception {
    int port = Integer.parseInt(args[0]);
    int serverPort = Integer.parseInt(args[1]);
    String table = args[2];
    String mode = args[3];
    int rowA = Integer.parseInt(args[4]);
    int rowB = Integer.parseInt(args[5]);
    try (Connection direct = DriverManager.getConnection(
             "jdbc:postgresql://127.0.0.1:" + serverPort + "/postgres?user=postgres")) {
      direct.setAutoCommit(true);
      if (mode.equals("values")) {
        values(port, direct, table, rowA, rowB);
        return;
      }
      boolean rewrite = mode.equals("rewrite");
      String upd = "UPDATE " + table + " SET v = v + 1 WHERE k = ?";
      try (Connection a = open(port, false); Connection b = open(port, rewrite)) {
        PreparedStatement ua = a.prepareStatement(upd);
        ua.setInt(1, rowB);
        if (ua.executeUpdate() != 1) fail("a's update");
        PreparedStatement ub = b.prepareStatement(rewrite
            ? "INSERT INTO " + table + " AS t (k, v) VALUES (?, 1) ON CONFLICT (k) DO UPDATE SET v = t.v + 1"
            : upd);
        CompletableFuture<String> second = CompletableFuture.supplyAsync(() -> {
          try {
            if (mode.equals("bigblind")) {
              int[] rows = new int[600];
              Arrays.fill(rows, rowA + 1);
              rows[400] = rowB;
              int updated = 0;
              for (int x : batch(ub, rows)) updated += x;
              b.commit();
              return updated + " committed";
            }
            int[] n = batch(ub, rowA, rowB, rowA + 1);
            b.commit();
            StringBuilder s = new StringBuilder();
            for (int x : n) s.append(x).append(' ');
            return s.append("committed").toString();
          } catch (BatchUpdateException e) {
            SQLException next = e.getNextException();
            return next != null ? next.getSQLState() : e.getSQLState();
          } catch (SQLException e) {
            return e.getSQLState();
          }
        });
        PreparedStatement locks = direct.prepareStatement("SELECT count(*) FROM pg_locks l JOIN pg_stat_activity s"
            + " USING (pid) WHERE NOT l.granted AND s.query LIKE ?");
        locks.setString(1, "%" + table + "%");
        boolean waited = false;
        for (int i = 0; i < 500 && !waited; i++) {
          try (ResultSet r = locks.executeQuery()) {
            r.next();
            waited = r.getInt(1) > 0;
          }
          if (!waited) Thread.sleep(20);
        }
        if (!waited) fail("b never waited for a's row lock");
        a.commit();
        String got = second.get(60, java.util.concurrent.TimeUnit.SECONDS);
        System.out.println(mode + ": " + got);
        if (got.equals("40001")) {
          b.rollback();
          PreparedStatement u = b.prepareStatement(upd + " RETURNING v");
          u.setInt(1, rowA + 2);
          try (ResultSet r = u.executeQuery()) {
            if (!r.next()) fail("no row after");
            System.out.println("after: " + r.getInt(1));
          }
          b.commit();
          expect(direct, table, rowA, 0);
          expect(direct, table, rowB, 1);
          expect(direct, table, rowA + 1, 0);
          expect(direct, table, rowA + 2, 1);
        } else if (got.equals("600 committed") && mode.equals("bigblind")) {
          expect(direct, table, rowA, 0);
          expect(direct, table, rowB, 2);
          expect(direct, table, rowA + 1, 599);
        } else if (got.endsWith("committed") && !mode.equals("bigblind")) {
          expect(direct, table, rowA, 1);
          expect(direct, table, rowB, 2);
          expect(direct, table, rowA + 1, 1);
          expect(direct, table, rowA + 2, 0);
        } else {
          fail("b got " + got);
        }
      }
    }
  }
}
