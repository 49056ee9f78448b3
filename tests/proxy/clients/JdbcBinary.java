// pgjdbc through `corral proxy`, default settings: each typed setter six
// times (unnamed statements, then server-prepared past prepareThreshold; int4,
// int8, uuid, numeric and the int4[] go in binary with their OIDs, the
// varchar as text), then once as a text literal.
// Usage: java -cp postgresql.jar JdbcBinary.java PORT (table bw_jdbc(jk int,
// v int, jl bigint, js varchar, ju uuid, jn numeric)). Prints one line per
// check; the test then expects each reference once, with seven commits.
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.util.UUID;

public class JdbcBinary {
  interface Setter {
    void set(Connection c, PreparedStatement p) throws Exception;
  }

  static void check(Connection c, String pred, Setter s, String text) throws Exception {
    final String upd = "UPDATE bw_jdbc SET v = v + 1 WHERE ";
    try (PreparedStatement p = c.prepareStatement(upd + pred)) {
      for (int i = 0; i < 6; i++) {
        s.set(c, p);
        if (p.executeUpdate() != (pred.contains("ANY") ? 2 : 1)) throw new AssertionError(pred);
      }
    }
    try (Statement st = c.createStatement()) {
      st.executeUpdate(upd + text);
    }
    System.out.println("typed " + pred + " x6 and text " + text);
  }

  public static void main(String[] args) throws Exception {
    try (Connection c = DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + args[0] + "/" + System.getenv().getOrDefault("CORRAL_TEST_DB", "postgres"), "postgres", "")) {
      check(c, "jk = ?", (k, p) -> p.setInt(1, 5), "jk = 5");
      check(c, "jl = ?", (k, p) -> p.setLong(1, 7L), "jl = 7");
      check(c, "js = ?", (k, p) -> p.setString(1, "s3"), "js = 's3'");
      check(c, "ju = ?", (k, p) -> p.setObject(1, UUID.fromString("12345678-9abc-def0-1234-56789abcdef0")),
            "ju = '12345678-9abc-def0-1234-56789abcdef0'");
      check(c, "jn = ?", (k, p) -> p.setBigDecimal(1, new BigDecimal("5.00")), "jn = 5");
      check(c, "jk = ANY(?)", (k, p) -> p.setArray(1, k.createArrayOf("int4", new Integer[] {1, 2})), "jk IN (1, 2)");
    }
  }
}
