// A JDBC client for tests/proxy/session_test.cc (issue 26, item 0): asks for
// SERIALIZABLE the way applications do, with Connection.setTransactionIsolation
// (pgjdbc sends SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL
// SERIALIZABLE), then runs `n` transactions and prints, for each, the
// isolation level the server reports inside it and the server process id:
//   java -cp /usr/share/java/postgresql.jar IsolationClient.java <jdbc-url> <n>
//   -> "serializable 12345" lines, then "done"
// Java 17 single-file launch; the driver's defaults otherwise (prepareThreshold=5).
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;

public class IsolationClient {
  public static void main(String[] args) throws Exception {
    String url = args[0];
    int n = Integer.parseInt(args[1]);
    try (Connection c = DriverManager.getConnection(url)) {
      c.setTransactionIsolation(Connection.TRANSACTION_SERIALIZABLE);
      c.setAutoCommit(false);
      for (int i = 0; i < n; i++) {
        try (Statement s = c.createStatement();
             ResultSet r = s.executeQuery(
                 "SELECT current_setting('transaction_isolation'), pg_backend_pid()")) {
          r.next();
          System.out.println(r.getString(1) + " " + r.getInt(2));
        }
        c.commit();
      }
    }
    System.out.println("done");
  }
}
