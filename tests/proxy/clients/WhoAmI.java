// Prints "<current_user> <current_database>" of one JDBC connection through
// the proxy (args: url user password); exit 2 with "refused <SQLSTATE> ..."
// on a refused login.
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Properties;

public class WhoAmI {
  public static void main(String[] args) throws Exception {
    Properties p = new Properties();
    p.setProperty("user", args[1]);
    p.setProperty("password", args[2]);
    p.setProperty("sslmode", "disable");
    try (Connection c = DriverManager.getConnection(args[0], p);
         ResultSet r = c.createStatement().executeQuery("SELECT current_user, current_database()")) {
      r.next();
      System.out.println(r.getString(1) + " " + r.getString(2));
    } catch (SQLException e) {
      System.out.println("refused " + e.getSQLState() + " " + e.getMessage());
      System.exit(2);
    }
  }
}
