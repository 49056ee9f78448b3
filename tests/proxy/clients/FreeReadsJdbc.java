// Reads through the proxy that it should pass unscheduled (free_reads) and
// work it should route, with pgjdbc's defaults (args: port dbname table).
// Prints "autocommit <v>..." (seven autocommit executions of one prepared
// SELECT: pgjdbc switches to a named server statement and binary integers
// after prepareThreshold = 5), "readonly <v>" (setReadOnly(true) with
// autocommit off: pgjdbc opens the block inside its first unit) and
// "write <v>" (an UPDATE of k = 9 in a transaction).
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.Properties;

public class FreeReadsJdbc {
  static int one(PreparedStatement s) throws Exception {
    try (ResultSet r = s.executeQuery()) {
      r.next();
      return r.getInt(1);
    }
  }

  public static void main(String[] args) throws Exception {
    Properties p = new Properties();
    p.setProperty("user", "postgres");
    p.setProperty("sslmode", "disable");
    String url = "jdbc:postgresql://127.0.0.1:" + args[0] + "/" + args[1];
    String table = args[2];
    try (Connection c = DriverManager.getConnection(url, p)) {
      StringBuilder out = new StringBuilder("autocommit");
      try (PreparedStatement s = c.prepareStatement("SELECT v FROM " + table + " WHERE k = ?")) {
        for (int i = 0; i < 7; i++) {
          s.setInt(1, 1 + i % 3);
          out.append(' ').append(one(s));
        }
      }
      System.out.println(out);
      c.setAutoCommit(false);
      c.setReadOnly(true);
      try (PreparedStatement s = c.prepareStatement("SELECT v FROM " + table + " WHERE k = ?")) {
        s.setInt(1, 4);
        System.out.println("readonly " + one(s));
      }
      c.commit();
      c.setReadOnly(false);
      try (PreparedStatement s = c.prepareStatement("UPDATE " + table + " SET v = v + 1 WHERE k = 9 RETURNING v")) {
        System.out.println("write " + one(s));
      }
      c.commit();
    }
  }
}
