// The PostgreSQL JDBC driver (Debian's libpostgresql-jdbc-java) through
// `corral proxy`: one scenario per run, for tests/drivers/drivers_test.cc.
// Java 17 single-file launch, no javac step:
//
//   java -cp /usr/share/java/postgresql.jar JdbcClient.java \
//       HOST PORT USER DBNAME SSLMODE TABLE SCENARIO
//
// Scenarios: defaults (pgjdbc's own settings: prepareThreshold=5, so from
// the fifth execution a statement runs as a named server-side statement
// S_n, and its extra_float_digits startup parameter), threshold1
// (prepareThreshold=1), batch (addBatch/executeBatch, in and out of a
// transaction), types (setInt/setLong/setString/setObject(UUID)/
// setBigDecimal/createArrayOf round-trips and lookups; pgjdbc sends int2/
// int4/int8 parameters in binary). Each checks what it reads back (exit 1
// on a mismatch) and prints one line `jdbc <scenario> key=value ...`.
import java.math.BigDecimal;
import java.sql.Array;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Properties;
import java.util.UUID;

public class JdbcClient {
  static void check(String what, Object got, Object want) {
    if (!java.util.Objects.equals(got, want)) {
      System.err.println("jdbc: " + what + ": got " + got + ", want " + want);
      System.exit(1);
    }
  }

  static long scalar(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  // Inserts, reads back with one reused statement (named server-side after
  // the threshold), and runs a committed and a rolled-back transaction.
  static void statements(Connection c, String t, String name) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute("CREATE TABLE " + t + " (k int PRIMARY KEY, v text NOT NULL, n bigint NOT NULL)");
    }
    try (PreparedStatement ins = c.prepareStatement("INSERT INTO " + t + " (k, v, n) VALUES (?, ?, ?)")) {
      for (int k = 1; k <= 30; k++) {
        ins.setInt(1, k);
        ins.setString(2, "v" + k);
        ins.setLong(3, k * 1000L);
        check("insert count", ins.executeUpdate(), 1);
      }
    }
    int selects = 0;
    try (PreparedStatement sel = c.prepareStatement("SELECT v, n FROM " + t + " WHERE k = ?")) {
      for (int k = 1; k <= 30; k++) {
        sel.setInt(1, k);
        try (ResultSet rs = sel.executeQuery()) {
          check("row " + k, rs.next(), true);
          check("v " + k, rs.getString(1), "v" + k);
          check("n " + k, rs.getLong(2), k * 1000L);
        }
        selects++;
      }
    }
    c.setAutoCommit(false);
    try (PreparedStatement up = c.prepareStatement("UPDATE " + t + " SET n = n + ? WHERE k = ?")) {
      for (int k = 1; k <= 10; k++) {
        up.setLong(1, 1);
        up.setInt(2, k);
        up.executeUpdate();
      }
    }
    c.commit();
    try (Statement s = c.createStatement()) {
      s.executeUpdate("DELETE FROM " + t);
    }
    c.rollback();
    c.setAutoCommit(true);
    System.out.println("jdbc " + name + " rows=" + scalar(c, "SELECT count(*) FROM " + t) + " selects=" + selects
        + " sum=" + scalar(c, "SELECT sum(n) FROM " + t));
  }

  static void batch(Connection c, String t) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute("CREATE TABLE " + t + " (k int PRIMARY KEY, v bigint NOT NULL)");
    }
    int inserted = 0;
    try (PreparedStatement ins = c.prepareStatement("INSERT INTO " + t + " (k, v) VALUES (?, ?)")) {
      for (int k = 1; k <= 500; k++) {
        ins.setInt(1, k);
        ins.setLong(2, k);
        ins.addBatch();
      }
      for (int n : ins.executeBatch()) inserted += n;
    }
    c.setAutoCommit(false);
    int updated = 0;
    try (PreparedStatement up = c.prepareStatement("UPDATE " + t + " SET v = v * 2 WHERE k = ?")) {
      for (int k = 1; k <= 500; k += 5) {
        up.setInt(1, k);
        up.addBatch();
      }
      for (int n : up.executeBatch()) updated += n;
    }
    c.commit();
    c.setAutoCommit(true);
    System.out.println("jdbc batch inserted=" + inserted + " updated=" + updated + " sum="
        + scalar(c, "SELECT sum(v) FROM " + t));
  }

  static void types(Connection c, String t) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute("CREATE TABLE " + t + " (k int PRIMARY KEY, b bigint, s text, u uuid, n numeric, a int[])");
    }
    UUID base = UUID.fromString("12345678-1234-5678-1234-567812345678");
    try (PreparedStatement ins = c.prepareStatement("INSERT INTO " + t + " VALUES (?, ?, ?, ?, ?, ?)")) {
      for (int k = 1; k <= 20; k++) {
        ins.setInt(1, k);
        ins.setLong(2, k * 10000000000L);
        ins.setString(3, "s" + k);
        ins.setObject(4, new UUID(base.getMostSignificantBits(), base.getLeastSignificantBits() + k));
        ins.setBigDecimal(5, new BigDecimal(k + ".25"));
        ins.setArray(6, c.createArrayOf("int4", new Integer[] {k, k + 1}));
        ins.executeUpdate();
      }
    }
    final int want = 7;
    int lookups = 0;
    Object[][] keys = {
      {"k", want}, {"b", want * 10000000000L}, {"s", "s" + want},
      {"u", new UUID(base.getMostSignificantBits(), base.getLeastSignificantBits() + want)},
      {"n", new BigDecimal(want + ".25")}};
    for (Object[] key : keys) {
      try (PreparedStatement sel = c.prepareStatement("SELECT k, a FROM " + t + " WHERE " + key[0] + " = ?")) {
        Object v = key[1];
        if (v instanceof Integer) sel.setInt(1, (Integer) v);
        else if (v instanceof Long) sel.setLong(1, (Long) v);
        else if (v instanceof String) sel.setString(1, (String) v);
        else if (v instanceof BigDecimal) sel.setBigDecimal(1, (BigDecimal) v);
        else sel.setObject(1, v);
        try (ResultSet rs = sel.executeQuery()) {
          check("lookup by " + key[0], rs.next(), true);
          check("k by " + key[0], rs.getInt(1), want);
          Integer[] a = (Integer[]) rs.getArray(2).getArray();
          check("array by " + key[0], a[0] + "," + a[1], want + "," + (want + 1));
          check("one row by " + key[0], rs.next(), false);
        }
      }
      lookups++;
    }
    int any = 0;
    try (PreparedStatement sel = c.prepareStatement("SELECT k FROM " + t + " WHERE k = ANY(?) ORDER BY k")) {
      Array arr = c.createArrayOf("int4", new Integer[] {4, 9, 16});
      sel.setArray(1, arr);
      StringBuilder ks = new StringBuilder();
      try (ResultSet rs = sel.executeQuery()) {
        while (rs.next()) {
          ks.append(ks.length() > 0 ? "," : "").append(rs.getInt(1));
          any++;
        }
      }
      check("= ANY", ks.toString(), "4,9,16");
    }
    System.out.println("jdbc types lookups=" + lookups + " any=" + any + " bsum="
        + scalar(c, "SELECT sum(b) FROM " + t) + " nsum=" + scalar(c, "SELECT sum(n)::bigint FROM " + t));
  }

  public static void main(String[] args) throws Exception {
    String host = args[0], port = args[1], user = args[2], db = args[3], sslmode = args[4], t = args[5];
    String scenario = args[6];
    Properties p = new Properties();
    p.setProperty("user", user);
    p.setProperty("sslmode", sslmode);
    p.setProperty("connectTimeout", "10");
    if (scenario.equals("threshold1")) p.setProperty("prepareThreshold", "1");
    try (Connection c = DriverManager.getConnection("jdbc:postgresql://" + host + ":" + port + "/" + db, p)) {
      try {
        switch (scenario) {
          case "defaults":
          case "threshold1":
            statements(c, t, scenario);
            break;
          case "batch":
            batch(c, t);
            break;
          case "types":
            types(c, t);
            break;
          default:
            System.err.println("unknown scenario " + scenario);
            System.exit(2);
        }
      } finally {
        c.setAutoCommit(true);
        try (Statement s = c.createStatement()) {
          s.execute("DROP TABLE IF EXISTS " + t);
        }
      }
    }
  }
}
